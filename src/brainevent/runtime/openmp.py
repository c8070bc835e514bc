"""The OpenMP runtime's wait policy, chosen before a module that links OpenMP is loaded.

libgomp's workers spin after each parallel region; called from XLA's busy CPU thread pool,
that made a small kernel cost milliseconds per call. libgomp reads its environment once, when
it is loaded, so OMP_WAIT_POLICY=PASSIVE is set before the first such module is opened.
"""

from __future__ import annotations

import logging
import os
import re

log = logging.getLogger("brainevent")

# Variables through which a user has already chosen how the runtime waits.
USER_POLICY_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
_RUNTIME = re.compile(r"/lib(gomp|omp|iomp5)[^/]*\.so")

_warned = False


def openmp_runtime_loaded(maps: str | None = None) -> bool:
    """Whether an OpenMP runtime (libgomp, libomp, libiomp5) is mapped into this process."""
    if maps is None:
        try:
            with open("/proc/self/maps") as f:
                maps = f.read()
        except OSError:  # not Linux: nothing to tell
            return False
    return bool(_RUNTIME.search(maps))


def prepare_openmp_runtime() -> str | None:
    """Called before dlopen of a module that links OpenMP; returns what it did, for logs and tests.

    "set": OMP_WAIT_POLICY=PASSIVE was put in the environment (the runtime is not loaded yet).
    "user": the user's own policy stands. "off": turned off by BRAINEVENT_OPENMP_PASSIVE=0.
    "loaded": the runtime was loaded already, with its default policy (logged once).
    """
    global _warned
    if any(os.environ.get(name) for name in USER_POLICY_VARIABLES):
        return "user"
    from .. import config

    if not config.OPENMP_PASSIVE.get():
        return "off"
    if not openmp_runtime_loaded():
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # os.environ also sets the C environment
        log.debug("OMP_WAIT_POLICY=PASSIVE set before the OpenMP runtime is loaded")
        return "set"
    if not _warned:
        _warned = True
        log.warning(
            "an OpenMP runtime was already loaded in this process with its default (spinning) "
            "wait policy, which can make OpenMP kernels called from JAX cost milliseconds per "
            "call. Set OMP_WAIT_POLICY=PASSIVE in the environment before Python starts (or "
            "before anything imports an OpenMP library)."
        )
    return "loaded"
