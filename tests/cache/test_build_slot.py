"""A build slot (cache/publish.py): staging directories left by dead builders are swept, those of
live ones are kept, and a slot's staging directory is gone once the slot is left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from brainevent.cache.key import KeyBuilder
from brainevent.cache.publish import build_slot
from brainevent.cache.store import EntryStore


def test_staging_of_a_dead_builder_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    store = EntryStore(tmp_path / "cache", "slot_sweep")
    key = KeyBuilder("test").add("x", 1).finish()
    store.prepare(create=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(dead.stdout)  # exited: its pid names no process (reuse within the test is unlikely)
    abandoned = store.module_dir / f".staging-{key.short}-{dead_pid}-abc"
    live = store.module_dir / f".staging-{key.short}-1-def"  # pid 1: alive (maybe another user's)
    other_key = store.module_dir / f".staging-0000-{dead_pid}-ghi"  # another key's: not this slot's
    for directory in (abandoned, live, other_key):
        directory.mkdir()
    with build_slot(store, key) as slot:
        assert slot.existing is None and slot.staging is not None and slot.staging.is_dir()
        assert not abandoned.exists()
        assert live.is_dir() and other_key.is_dir()
        staging = slot.staging
    assert not staging.exists()
