"""Where a cold CUDA load's nvcc time goes: our exact build commands and their parts, against
the bare ``nvcc -shared`` of bench_nvcc_overhead.py, interleaved.

The script loads the seeds' vector add once (compile-only, ``--arch``) and keeps the build
directory and commands ninja got for it, then times in turns:

- ``bare``: ``nvcc -shared -Xcompiler -fPIC -arch=ARCH`` of the kernel with a raw-pointer
  launcher (nvcc's defaults: host code at ``-O0``, a device-link step); ``bare_O3`` the same at ``-O3``;
- ``ours_ninja``: the whole build as ninja runs it (kernel unit and FFI handlers in parallel, then
  the link);
- ``ours_kernel_c``: nvcc's compile of the kernel unit alone; ``ours_c_user_code``: the user's
  code alone (no entry points); ``ours_c_with_handlers``: the kernel unit with the FFI handlers
  appended, as builds before the handlers got a unit of their own compiled it;
- ``handlers_gxx``: the handlers' unit, by the host compiler; ``link``: the link alone.

Usage: python benchmarks/bench_nvcc_parts.py [--repeat N] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import SEED_ADD
from bench_nvcc_overhead import RAW
from common import DEFAULT_ARCH, SRC, precompile

ENTRY_POINTS = '#line 1 "<brainevent entry points>"'


def built_commands(arch: str, work: Path) -> dict[str, list[str]]:
    """The commands of a cold load's build, by output, with the build directory it ran in
    copied to ``work / "build"``."""
    sys.path.insert(0, str(SRC))
    os.environ["BRAINEVENT_CACHE_DIR"] = str(work / "cache")
    import brainevent

    load = brainevent.load_cuda_inline
    load(name="parts_seed", cuda_sources=SEED_ADD, compute_capability=arch, auto_register=False)
    spawn: Any = subprocess.Popen  # subclassed below to see what ninja is given
    staged: list[str] = []

    class Copying(spawn):
        def __init__(self, args: list[str], *rest: object, **options: object) -> None:
            if "ninja" in os.path.basename(str(args[0])):  # the build directory as ninja gets it
                staged.append(args[args.index("-C") + 1])
                shutil.copytree(staged[0], work / "build")
            super().__init__(args, *rest, **options)

    subprocess.Popen = Copying  # type: ignore[misc, assignment]  # restored below
    try:
        load(name="parts", cuda_sources=SEED_ADD, compute_capability=arch, auto_register=False)
    finally:
        subprocess.Popen = spawn  # type: ignore[misc]
    ninja_file = work / "build" / "build.ninja"
    ninja_file.write_text(ninja_file.read_text().replace(staged[0], str(work / "build")))
    lines = ninja_file.read_text().splitlines()
    rules = {x.split()[1]: y.split("=", 1)[1] for x, y in itertools.pairwise(lines) if x.startswith("rule ")}
    commands = {}
    for line in lines:
        if line.startswith("build "):  # build <output>: <rule> <inputs>
            output, rule = line[len("build ") :].split(": ")[0], line.split(": ")[1].split()[0]
            commands[output] = shlex.split(rules[rule])
    return commands


def variants(commands: dict[str, list[str]], arch: str, build: Path) -> dict[str, list[str]]:
    from brainevent.build.ninja import ninja_executable

    kernel = commands["k0.o"]
    unit = next(a for a in kernel if a.startswith("src/k0_"))
    text = (build / unit).read_text()
    handlers = "\n" + '#line 1 "<brainevent binding>"\n' + (build / "src" / "binding.cpp").read_text()
    (build / "with_handlers.cu").write_text(text + handlers)
    (build / "user_code.cu").write_text(text[: text.index(ENTRY_POINTS)])
    (build / "raw.cu").write_text(RAW)
    flags = kernel[: kernel.index(unit)]
    nvcc = kernel[0]
    bare = [nvcc, "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "raw.cu", "-o"]
    library = next(out for out in commands if out.endswith(".so"))
    ninja = shlex.quote(ninja_executable())
    return {
        "bare": [*bare, "raw.so"],
        "bare_O3": [*bare, "raw3.so", "-O3"],
        "ours_ninja": ["sh", "-c", f"rm -f k0.o binding.o {library} && {ninja} -C ."],
        "ours_kernel_c": kernel,
        "ours_c_user_code": [*flags, "user_code.cu", "-c", "-o", "user_code.o"],
        "ours_c_with_handlers": [*flags, "with_handlers.cu", "-c", "-o", "with_handlers.o"],
        "handlers_gxx": commands["binding.o"],
        "link": commands[library],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    args = parser.parse_args()
    precompile()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        commands = built_commands(args.arch, work)
        runs = variants(commands, args.arch, work / "build")
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
