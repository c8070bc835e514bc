"""Key -> build plan (cache misses only): resolve the specs, write the generated units (the
user's source, its trampolines and FFI handlers), fetch the shared decoder (stages/decoder.py)
and ask the platform for the compile and link steps."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from ..build.step import BuildStep
from ..errors import SpecError
from ..fileio import atomic_write, make_dir
from ..load_options import SourceUnit
from ..platforms.steps import GeneratedSources
from ..spec.model import FunctionSpec
from .decoder import DECODER_OBJECT, DecoderPlan, prepare_decoder
from .request import LoadRequest


class BuildPlan(NamedTuple):
    specs: tuple[FunctionSpec, ...]
    sources: GeneratedSources  # the link's library is renamed after its content once built
    steps: tuple[BuildStep, ...]
    decoder: DecoderPlan  # fetched from the cache, or compiled (and published) by this build


def plan_build(staging: Path, request: LoadRequest) -> BuildPlan:
    """Writes the generated sources into ``staging`` and returns the steps that build them."""
    # Imported here: only a cache miss needs the C++ reader and the generator.
    from ..build.ninja import preprocess
    from ..codegen import render_binding, render_kernel_unit
    from ..spec.resolve import resolve_functions

    units, options, platform = request.units, request.options, request.platform
    refuse_c_entry_points(units, request.functions)  # C units hold no entry points
    specs = resolve_functions(
        request.functions,
        [(u.display_name, u.text) for u in units if u.suffix != ".c"],
        preprocess=partial(preprocess, staging, units, partial(platform.preprocess_command, options)),
    )
    index = {u.display_name: i for i, u in enumerate(units)}
    make_dir(staging / "src")
    apart, target = platform.binding_apart and bool(specs), platform.binding_target
    kernel_units = []
    for i, unit in enumerate(units):
        own = [s for s in specs if index[s.source_file] == i]  # the entry points this unit defines
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(unit.display_name).stem)[:40]
        file_name = f"k{i}_{stem}{unit.suffix}"
        binding = render_binding(options.name, own, target=target) if own and not apart else ""
        text = render_kernel_unit(unit.display_name, unit.text, own, binding)
        atomic_write(staging / "src" / file_name, text)
        kernel_units.append((f"src/{file_name}", unit))
    binding_unit = "src/binding.cpp" if apart else None
    if binding_unit is not None:
        atomic_write(staging / binding_unit, render_binding(options.name, specs, target=target))
    decoder_source, decoder = prepare_decoder(staging, request)
    library = f"lib{options.name}.so"
    sources = GeneratedSources(tuple(kernel_units), DECODER_OBJECT, decoder_source, library, binding_unit)
    return BuildPlan(tuple(specs), sources, tuple(platform.compile_steps(options, sources)), decoder)


_ANNOTATION = r"//\s*@BE\s+([A-Za-z_]\w*)"  # compiled by `re` on first use


def refuse_c_entry_points(units: Sequence[SourceUnit], functions: Any) -> None:
    """An entry point in a .c unit cannot be compiled there (see request.refuse_c_only): refused
    before the C++ reader sees the file, by its annotation or by a requested name that only a
    C file defines."""
    c_units = [u for u in units if u.suffix == ".c"]
    if not c_units:
        return
    cxx_text = "\n".join(u.text for u in units if u.suffix != ".c")
    requested = [str(f) for f in functions] if isinstance(functions, (Mapping, list, tuple)) else []
    for unit in c_units:
        names = re.findall(_ANNOTATION, unit.text)
        names += [n for n in requested if _defines(unit.text, n) and not _defines(cxx_text, n)]
        if names:
            raise SpecError(
                f"function {names[0]!r} is an entry point but {unit.display_name} is compiled as C, "
                "and entry points take BE::Tensor, a C++ type. Put the entry point in a .cpp file "
                'of the same module and let it call the C function (declared extern "C").',
                value=names[0],
                function=names[0],
            )


def _defines(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\s*\(", text) is not None
