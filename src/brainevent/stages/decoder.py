"""The call-frame decoder every module links: compiled once per toolchain and platform, then shared.

The first build that needs it compiles it beside the user's code and publishes the object
(``v1/.decoder/objects/``, an atomic rename: racing first builds make identical bytes); later
builds copy it. Its key: the compile command, its source and
:func:`platforms.steps.decoder_salt`. docs/architecture.md, "The generated code".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..cache import LAYOUT_VERSION, cache_root
from ..codegen import render_decoder
from ..fileio import atomic_write

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..cache.objects import ObjectCache
    from .request import LoadRequest

DECODER_SOURCE = "src/decoder.cpp"
DECODER_OBJECT = "decoder.o"
DECODER_DIR = ".decoder"


class DecoderPlan(NamedTuple):
    """Where this build's decoder comes from."""

    key: str  # the object cache key
    cache: ObjectCache
    fetched: bool  # True: copied into the build directory; False: this build compiles it


def prepare_decoder(staging: Path, request: LoadRequest) -> tuple[str | None, DecoderPlan]:
    """Writes the decoder's source into ``staging`` and fetches its object from the cache.

    Returns (the decoder source for GeneratedSources, None when the object was fetched; the plan).
    """
    from ..cache.objects import ObjectCache
    from ..platforms.steps import GeneratedSources, decoder_salt
    from ..trust import private_dir

    platform = request.platform
    atomic_write(staging / DECODER_SOURCE, render_decoder(target=platform.binding_target))
    step = platform.decoder_step(GeneratedSources((), DECODER_OBJECT, DECODER_SOURCE, ""))
    base = cache_root(request.options.build_directory) / LAYOUT_VERSION
    if private_dir(base, create=False):
        private_dir(base / DECODER_DIR, create=True)
    cache = ObjectCache(base / DECODER_DIR / "objects")
    key = cache.key(staging, step, json.dumps(decoder_salt(platform.name), sort_keys=True, default=str))
    fetched = cache.fetch(key, staging / DECODER_OBJECT) is not None
    return (None if fetched else DECODER_SOURCE), DecoderPlan(key, cache, fetched)


def publish_decoder(staging: Path, plan: DecoderPlan, started_ns: int, steps: tuple[BuildStep, ...]) -> None:
    """Publishes the decoder this build compiled (it reads only keyed headers: no record)."""
    if not plan.fetched and any(step.output == DECODER_OBJECT for step in steps):
        plan.cache.publish(plan.key, staging / DECODER_OBJECT, {}, started_ns)
