"""The coordination service's key-value store, as far as the exchange needs it.

Found without initialising anything (JAX's distributed state is read only once JAX imported
it). Bytes values and an atomic increment are used where the jaxlib has them, with text
(base64) and set-if-absent as fallbacks.
"""

from __future__ import annotations

import base64
import sys
from typing import Any


class KeyValue:
    """One process's view of the job's key-value store."""

    def __init__(self, client: Any, process_id: int, num_processes: int) -> None:
        self._client = client
        self.process_id = process_id
        self.num_processes = num_processes
        # Every process of a job runs the same jaxlib, so all pick the same encoding.
        self._binary = all(
            hasattr(client, f) for f in ("key_value_set_bytes", "blocking_key_value_get_bytes")
        )

    def claim(self, key: str) -> bool:
        """True for exactly one caller per key over the whole job: the first to ask."""
        increment = getattr(self._client, "key_value_increment", None)
        if increment is not None:
            return int(increment(key, 1)) == 1
        try:
            self._client.key_value_set(key, str(self.process_id))
        except Exception as exc:  # jaxlib raises its own runtime error type
            if "ALREADY_EXISTS" in str(exc):
                return False
            raise
        return True

    def put(self, key: str, value: bytes) -> None:
        if self._binary:
            self._client.key_value_set_bytes(key, value, allow_overwrite=True)
        else:
            self._client.key_value_set(key, base64.b64encode(value).decode("ascii"), allow_overwrite=True)

    def get(self, key: str, timeout_s: float) -> bytes | None:
        """The value, waiting up to ``timeout_s`` for it to be set; None if it was not."""
        timeout_ms = max(1, int(timeout_s * 1000))
        try:
            if self._binary:
                return bytes(self._client.blocking_key_value_get_bytes(key, timeout_ms))
            text = self._client.blocking_key_value_get(key, timeout_ms)
        except Exception as exc:
            if "DEADLINE_EXCEEDED" in str(exc):
                return None
            raise
        return base64.b64decode(text)

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
