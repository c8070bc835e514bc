"""NVRTC's worker (worker.py), started by the first compile and kept for the next; libnvrtc is never
loaded here. Each compile is a job of build/runner.py: on a timeout, Ctrl-C or a crash the worker is
killed, and the next compile starts another."""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
from typing import Any, NamedTuple

from ..build.runner import supervise
from ..errors import ToolchainError
from . import worker as protocol
from .toolkit import locate_nvrtc


class NvrtcInfo(NamedTuple):
    """The libnvrtc the worker bound."""

    path: str
    found_via: str
    version: tuple[int, int]


class Worker:
    """One worker process, and what it said of its libnvrtc once it said it (``info``)."""

    def __init__(self) -> None:
        self.located, self.owner = locate_nvrtc(), os.getpid()  # a fork's child starts its own
        self.info: NvrtcInfo | None = None
        # -I -S: no PYTHON* variables, no site-packages: the standard library only.
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", protocol.__file__, self.located.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # the terminal's Ctrl-C is this process's to act on
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests, self.replies = self.proc.stdin.fileno(), self.proc.stdout.fileno()

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def kill(self) -> None:
        global _worker
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.stdout.close()  # type: ignore[union-attr]
        if _worker is self:
            _worker = None

    def hello(self) -> NvrtcInfo:
        """Its first frame, which NVRTC it bound; ToolchainError when that cannot compile."""
        if self.info is not None:
            return self.info
        said = protocol.read_frame(self.replies)
        if "error" in said:
            raise ToolchainError(
                f"cannot load libnvrtc {self.located.path}: {said['error']}", compiler="nvrtc"
            )
        version, missing = tuple(said["version"]), said["missing"]
        if missing or version < protocol.MIN_RELEASE:
            lacks = ", ".join(f"{n} (CUDA {r})" for n, r in sorted(missing.items()))
            lacks = f"lacks {lacks}" if missing else f"is NVRTC {version[0]}.{version[1]}"
            raise ToolchainError(
                f"the libnvrtc at {said['path']} {lacks}: brainevent compiles with NVRTC "
                f"{protocol.MIN_RELEASE[0]}.{protocol.MIN_RELEASE[1]} or newer (its --fdevice-time-trace "
                "tells which headers a compile read). Install a newer one: pip install "
                "'nvidia-cuda-nvrtc-cu12>=12.9' (CUDA 12) or nvidia-cuda-nvrtc (CUDA 13).",
                compiler="nvrtc",
                value=said["path"],
            )
        self.info = NvrtcInfo(said["path"], self.located.found_via, (version[0], version[1]))
        return self.info


class _Exchange:
    """One request and its reply, as a job of the compile runner."""

    def __init__(self, worker: Worker, request: dict[str, Any]) -> None:
        self.worker, self.reply = worker, None
        try:
            with contextlib.suppress(BrokenPipeError):  # it ended before reading: its first frame says why
                protocol.write_frame(worker.requests, request)
        except BaseException:  # half a frame written: the worker cannot be used again
            worker.kill()
            raise

    def wait(self, seconds: float) -> bool:
        try:
            while select.select([self.worker.replies], [], [], seconds)[0]:
                if self.worker.info is None:
                    self.worker.hello()
                    seconds = 0
                    continue
                self.reply = protocol.read_frame(self.worker.replies)
                return True
        except EOFError:
            code = self.worker.proc.wait()
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            raise ToolchainError(
                f"NVRTC's process ended ({how}) during the compile; this process is unaffected, and the "
                "next compile starts NVRTC again. If it happens again with this source, report it to "
                "NVIDIA with the source and the NVRTC version (`brainevent doctor` shows it).",
                compiler="nvrtc",
            ) from None
        return False

    def stop(self) -> None:
        self.worker.kill()

    def output(self) -> str:
        return ""


_worker: Worker | None = None
_lock = threading.Lock()  # one request at a time per worker


def _current() -> Worker:
    global _worker
    if _worker is None or not _worker.alive():
        _worker = Worker()
    return _worker


def prestart() -> None:
    """Starts the worker now, a compile follows: its start overlaps the build's other setup."""
    with _lock:
        _current()


def request(message: dict[str, Any], what: str) -> dict[str, Any]:
    """The worker's reply to ``message`` (a compile of ``what``), through the compile runner."""
    with _lock:
        exchange = supervise(lambda: _Exchange(_current(), message), what)
    assert exchange.reply is not None
    return exchange.reply


def nvrtc_info() -> NvrtcInfo:
    """Which libnvrtc compiles (starting the worker); ToolchainError when none can."""
    with _lock:
        worker = _current()
        try:
            return worker.hello()
        except BaseException:
            worker.kill()
            raise


@atexit.register
def _close() -> None:
    """Ends an idle worker: it exits when its input closes."""
    if _worker is not None and _worker.alive():
        with contextlib.suppress(OSError):
            _worker.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            _worker.proc.wait(timeout=1)
