"""The coordination service's key-value store, as far as the exchange needs it.

Found without initialising anything (JAX's distributed state is read only once JAX imported
it). Every supported jaxlib (jax >= 0.10.2) has bytes values and an atomic increment.
"""

from __future__ import annotations

import sys
from typing import Any


class KeyValue:
    """One process's view of the job's key-value store."""

    def __init__(self, client: Any, process_id: int, num_processes: int) -> None:
        self._client = client
        self.process_id = process_id
        self.num_processes = num_processes

    def claim(self, key: str) -> bool:
        """True for exactly one caller per key over the whole job: the first to ask."""
        return int(self._client.key_value_increment(key, 1)) == 1

    def put(self, key: str, value: bytes) -> None:
        self._client.key_value_set_bytes(key, value, allow_overwrite=True)

    def get(self, key: str, timeout_s: float) -> bytes | None:
        """The value, waiting up to ``timeout_s`` for it to be set; None if it was not."""
        try:
            return bytes(self._client.blocking_key_value_get_bytes(key, max(1, int(timeout_s * 1000))))
        except Exception as exc:  # jaxlib raises its own runtime error type
            if "DEADLINE_EXCEEDED" in str(exc):
                return None
            raise

    def try_get(self, key: str) -> bytes | None:
        """The value if it is set now, else None (a blocking get that waits a tenth of a second at most)."""
        return self.get(key, 0.1)


def current() -> KeyValue | None:
    """The running job's store, or None outside a multi-process ``jax.distributed`` job."""
    module = sys.modules.get("jax._src.distributed")
    if module is None:  # JAX never imported its distributed runtime: nothing was initialised
        return None
    state = getattr(module, "global_state", None)
    client = getattr(state, "client", None)
    count = getattr(state, "num_processes", None)
    if client is None or not isinstance(count, int) or count < 2:
        return None
    return KeyValue(client, int(getattr(state, "process_id", 0) or 0), count)
