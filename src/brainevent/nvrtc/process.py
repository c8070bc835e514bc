"""NVRTC's worker (nvrtc/worker.py): a process of this one's, started by the first compile that
needs it and kept for the next; libnvrtc is never loaded here. Each compile goes through the
compile runner (build/runner.py): on a timeout, Ctrl-C or a crash the worker is killed (nothing
else runs in it), and the next compile starts another. A cache hit never gets here.
"""

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
    """One worker process and what it said of its libnvrtc (``hello``), once it said it."""

    def __init__(self) -> None:
        self.located = locate_nvrtc()
        self.owner = os.getpid()  # a fork's child starts its own
        # -I -S: no user site, no PYTHON* variables, no site-packages: the standard library only.
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", protocol.__file__, self.located.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # the terminal's Ctrl-C is this process's to act on
        )
        self.hello: dict[str, Any] | None = None

    def info(self) -> NvrtcInfo:
        assert self.hello is not None
        return NvrtcInfo(self.hello["path"], self.located.found_via, tuple(self.hello["version"]))

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]

    def close(self) -> None:
        """Ends an idle worker: it exits when its input closes."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.kill()

    def checked_hello(self) -> None:
        """The first frame: which NVRTC was bound; ToolchainError when it cannot compile."""
        assert self.proc.stdout is not None
        self.hello = protocol.read_frame(self.proc.stdout.fileno())
        path = self.located.path or " or ".join(protocol.SONAMES)
        if "error" in self.hello:
            raise ToolchainError(_NOT_FOUND + f" ({self.hello['error']})", compiler="nvrtc", value=path)
        version, missing = tuple(self.hello["version"]), self.hello["missing"]
        if missing or version < protocol.MIN_RELEASE:
            names = ", ".join(f"{n} (CUDA {r})" for n, r in sorted(missing.items()))
            lacks = f"lacks {names}" if missing else f"is NVRTC {version[0]}.{version[1]}"
            raise ToolchainError(
                f"the libnvrtc at {self.hello['path']} {lacks}: brainevent compiles with NVRTC "
                f"{protocol.MIN_RELEASE[0]}.{protocol.MIN_RELEASE[1]} or newer (its --fdevice-time-trace "
                "tells which headers a compile read). Install a newer one: pip install "
                "'nvidia-cuda-nvrtc-cu12>=12.9' (CUDA 12) or nvidia-cuda-nvrtc (CUDA 13).",
                compiler="nvrtc",
                value=self.hello["path"],
            )


_NOT_FOUND = (
    "cannot load libnvrtc, which brainevent.cuda_kernel compiles with: install NVIDIA's wheel "
    "(`pip install nvidia-cuda-nvrtc` for CUDA 13, `pip install nvidia-cuda-nvrtc-cu12` for CUDA 12; "
    "jax[cuda12] and jax[cuda13] already bring it) or point CUDA_HOME at a CUDA toolkit"
)


class _Exchange:
    """One request and its reply, as a job of the compile runner."""

    def __init__(self, worker: Worker, request: dict[str, Any]) -> None:
        self.worker, self.reply = worker, None
        assert worker.proc.stdin is not None and worker.proc.stdout is not None
        self.out = worker.proc.stdout.fileno()
        try:
            with contextlib.suppress(BrokenPipeError):  # it ended before reading: its first frame says why
                protocol.write_frame(worker.proc.stdin.fileno(), request)
        except BaseException:  # half a frame written: the worker cannot be used again
            self.stop()
            raise

    def wait(self, seconds: float) -> bool:
        if not select.select([self.out], [], [], seconds)[0]:
            return False
        try:
            if self.worker.hello is None:
                self.worker.checked_hello()
                return self.wait(0)
            self.reply = protocol.read_frame(self.out)
        except EOFError:
            raise self._ended() from None
        return True

    def _ended(self) -> ToolchainError:
        code = self.worker.proc.wait()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return ToolchainError(
            f"NVRTC's process ended ({how}) during the compile; this process is unaffected, and the "
            "next compile starts NVRTC again. If it happens again with this source, report it to NVIDIA "
            "with the source and the NVRTC version (brainevent doctor shows it).",
            compiler="nvrtc",
        )

    def stop(self) -> None:
        self.worker.kill()
        global _worker
        if _worker is self.worker:
            _worker = None

    def output(self) -> str:
        return ""


_worker: Worker | None = None
_lock = threading.Lock()  # one request at a time per worker


def prestart() -> None:
    """Starts the worker now (a compile follows): its start overlaps the build's other setup."""
    with _lock:
        _current()


def _current() -> Worker:
    global _worker
    if _worker is None or not _worker.alive():
        _worker = Worker()
    return _worker


def request(message: dict[str, Any], what: str) -> dict[str, Any]:
    """The worker's reply to ``message`` (a compile of ``what``), through the compile runner."""
    with _lock:
        exchange = supervise(lambda: _Exchange(_current(), message), what)
    assert exchange.reply is not None
    return exchange.reply


def nvrtc_info() -> NvrtcInfo:
    """Which libnvrtc compiles (the worker is started if it is not running); ToolchainError
    when none can."""
    with _lock:
        worker = _current()
        if worker.hello is None:
            try:
                worker.checked_hello()
            except BaseException:
                worker.kill()
                raise
        return worker.info()


@atexit.register
def _close() -> None:
    if _worker is not None and _worker.alive():
        _worker.close()
