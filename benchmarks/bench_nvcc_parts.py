"""Where a cold CUDA load's nvcc time goes: our exact build command and its parts, against the
bare ``nvcc -shared`` of bench_nvcc_overhead.py, interleaved.

The script loads the seeds' vector add once (compile-only, ``--arch``) and keeps the command
ninja ran for it, then times in turns:

- ``bare``: ``nvcc -shared -Xcompiler -fPIC -arch=ARCH`` of the kernel with a raw-pointer
  launcher (nvcc's defaults: host code at ``-O0``, a device-link step); ``bare_O3`` the same at ``-O3``;
- ``ours``: the command ninja ran (compile and link in one nvcc call, with the decoder object);
- ``ours_c``: the same unit compiled only (``-c``); ``ours_c_no_handlers``: without the
  generated FFI handlers; ``ours_c_user_code``: the user's code alone (no entry points either);
- ``handlers_gxx``: the handlers compiled by the host compiler as a unit of their own, and
  ``link``: linking the objects without compiling: what a split into two units would add.

Usage: python benchmarks/bench_nvcc_parts.py [--repeat N] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import SEED_ADD
from bench_nvcc_overhead import RAW
from common import DEFAULT_ARCH, SRC, precompile

HANDLERS = '#line 1 "<brainevent binding>"'
ENTRY_POINTS = '#line 1 "<brainevent entry points>"'


def built_command(arch: str, work: Path) -> list[str]:
    """The nvcc command of a cold load, with the build directory it ran in copied to ``work``."""
    sys.path.insert(0, str(SRC))
    os.environ["BRAINEVENT_CACHE_DIR"] = str(work / "cache")
    import brainevent

    load = brainevent.load_cuda_inline
    load(name="parts_seed", cuda_sources=SEED_ADD, compute_capability=arch, auto_register=False)
    spawn = subprocess.Popen
    staged: list[str] = []

    class Copying(spawn):  # type: ignore[type-arg, misc]
        def __init__(self, args: list[str], *rest: object, **options: object) -> None:
            if "ninja" in os.path.basename(str(args[0])):  # the build directory as ninja gets it
                staged.append(args[args.index("-C") + 1])
                shutil.copytree(staged[0], work / "build")
            super().__init__(args, *rest, **options)

    subprocess.Popen = Copying  # type: ignore[misc]
    try:
        load(name="parts", cuda_sources=SEED_ADD, compute_capability=arch, auto_register=False)
    finally:
        subprocess.Popen = spawn  # type: ignore[misc]
    ninja_file = (work / "build" / "build.ninja").read_text()
    line = next(x for x in ninja_file.splitlines() if x.strip().startswith("command ="))
    return [a.replace(staged[0], str(work / "build")) for a in shlex.split(line.split("=", 1)[1])]


def variants(command: list[str], arch: str, build: Path) -> dict[str, list[str]]:
    unit = next(a for a in command if a.startswith("src/k0_"))
    text = (build / unit).read_text()
    (build / "no_handlers.cu").write_text(text[: text.index(HANDLERS)])
    (build / "user_code.cu").write_text(text[: text.index(ENTRY_POINTS)])
    (build / "handlers.cpp").write_text(text[text.index(HANDLERS) :])
    (build / "raw.cu").write_text(RAW)
    link_only = {"-shared", "-nodlink", "-Xlinker=--strip-all", "-Xlinker", "-z,defs"}
    compile_flags = [a for a in command[: command.index(unit)] if a not in link_only]
    host = command[command.index("-ccbin") + 1]
    includes = [a for i, a in enumerate(command) if i and command[i - 1] in ("-I", "-isystem")]
    nvcc = command[0]
    bare = [nvcc, "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "raw.cu", "-o"]
    host_flags = ["-std=c++17", "-O3", "-fPIC", "-fvisibility=hidden", "-I", includes[0]]
    host_flags += ["-isystem", includes[1]]
    objects = ["no_handlers.o", "handlers.o", "decoder.o"]
    return {
        "bare": [*bare, "raw.so"],
        "bare_O3": [*bare, "raw3.so", "-O3"],
        "ours": command,
        "ours_c": [*compile_flags, unit, "-c", "-o", "full.o"],
        "ours_c_no_handlers": [*compile_flags, "no_handlers.cu", "-c", "-o", "no_handlers.o"],
        "ours_c_user_code": [*compile_flags, "user_code.cu", "-c", "-o", "user_code.o"],
        "handlers_gxx": [host, *host_flags, "-c", "handlers.cpp", "-o", "handlers.o"],
        "link": [nvcc, "-ccbin", host, "-shared", "-nodlink", *objects, "-o", "split.so"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    args = parser.parse_args()
    precompile()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        command = built_command(args.arch, work)
        runs = variants(command, args.arch, work / "build")
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, argv in runs.items():
                start = time.perf_counter()
                subprocess.run(argv, cwd=work / "build", check=True, capture_output=True)
                seconds[name].append(time.perf_counter() - start)
    bare = statistics.median(seconds["bare"])
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"{name:20}: median {median:.3f} s (min {min(values):.3f}), {median / bare:.3f}x bare")


if __name__ == "__main__":
    main()
