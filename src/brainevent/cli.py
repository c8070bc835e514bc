"""The command line: ``brainevent <command>`` or ``python -m brainevent <command>`` (``_COMMANDS``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import config
from .cache.admin import parse_age, parse_size
from .platform_table import BUILD_PLATFORMS

if TYPE_CHECKING:
    from .cache.admin import EntryInfo
    from .stages.request import LoadRequest


# Each command's help ("cache list": a subcommand of cache); every one takes --cache-dir.
_COMMANDS = {
    "demo": "compile and run a kernel on the best platform present",
    "doctor": "report the toolchain, GPUs and cache; exit 1 if the stack is broken",
    "cache": "inspect or trim the kernel cache",
    "cache list": "every cached module and entry",
    "cache info": "details of one module's entries",
    "cache clear": "remove one module's entries, or all of them (--all)",
    "cache prune": "remove old versions, old or least recently used entries (default: --keep-newest 1)",
    "choices": "backends remembered by benchmark(remember=True)",
    "ide": "write compile_commands.json for a directory of kernel files (clangd, IDEs)",
    "includes": "print the include flags a kernel file compiles with",
    "build": "compile kernel files or directories ahead of time",
}


def _parser() -> argparse.ArgumentParser:
    from .load_options import add_cli_flags

    # --cache-dir goes before the command, after it or after a cache subcommand (SUPPRESS:
    # a parser that does not see it leaves what another one read).
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "--cache-dir",
        default=argparse.SUPPRESS,
        type=_option(lambda raw: config.CACHE_DIR.given(raw, "--cache-dir")),
        metavar="DIR",
        help="cache root (default: BRAINEVENT_CACHE_DIR or ~/.cache/brainevent; empty: the default)",
    )
    about = "C++ and CUDA kernels for JAX: build them ahead of time, inspect the cache, check the setup."
    epilog = "`brainevent COMMAND --help` shows a command's options."
    top = argparse.ArgumentParser(prog="brainevent", description=about, epilog=epilog, parents=[shared])
    top.add_argument("-v", "--verbose", action="store_true", help="log build steps and commands to stderr")
    p = {"": top}  # the parsers by command ("" is the top)
    subs = {}  # the subparser groups by parent command
    for command, text in _COMMANDS.items():
        parent, _, name = command.rpartition(" ")
        if parent not in subs:  # dest: "command", "cache_command"
            subs[parent] = p[parent].add_subparsers(dest=f"{parent}_command".lstrip("_"), required=True)
        p[command] = subs[parent].add_parser(name, help=text, description=text, parents=[shared])

    p["doctor"].add_argument("--no-compile", action="store_true", help="skip the smoke compiles")
    p["doctor"].add_argument(
        "--require-build",
        action="store_true",
        help="exit 1 on a load-only node too (no compiler for C++ or, with a CUDA stack, CUDA)",
    )
    p["cache info"].add_argument("name", help="the module's name (`brainevent cache list` shows them)")
    which = p["cache clear"].add_mutually_exclusive_group()
    which.add_argument("name", nargs="?", help="the module whose entries go (`cache list` shows them)")
    which.add_argument("--all", action="store_true", help="remove every entry (asked for, not assumed)")
    p["cache prune"].add_argument(
        "--max-size", type=_option(parse_size), help="keep the cache under this size, e.g. 2G"
    )
    p["cache prune"].add_argument(
        "--older-than", type=_option(parse_age), help="remove entries unused for this long, e.g. 7d"
    )
    p["cache prune"].add_argument(
        "--keep-newest",
        type=int,
        metavar="N",
        help="keep only the N most recently used versions of each build of a module "
        "(versions differ in sources, compiler or brainevent version; builds in options or archs)",
    )
    p["choices"].add_argument(
        "action", nargs="?", choices=("list", "clear"), default="list", help="list (default) or forget them"
    )
    p["ide"].add_argument(
        "directory", nargs="?", default=".", help="the kernel files' directory (default: .)"
    )
    p["ide"].add_argument("--flag", action="append", default=[], help="one more compiler flag (repeatable)")
    p["ide"].add_argument("--arch", default="sm_80", help="the GPU architecture .cu files are read for")
    p["ide"].add_argument(
        "--output", metavar="PATH", help="write the database here (default: DIR/compile_commands.json)"
    )
    p["includes"].add_argument(
        "--cmake-dir",
        metavar="DIR",
        nargs="?",
        const="",
        help="instead, write a CMake package (brainevent::headers) into DIR (default: under the "
        "cache root) and print DIR, for -Dbrainevent_DIR=",
    )
    build = p["build"]
    build.add_argument("paths", nargs="*", help=".cu/.cpp files or directories of them")
    build.add_argument(
        "--as-inline",
        action="store_true",
        help="key each file as load_cuda_inline/load_cpp_inline(name=<file stem>, <file text>) would",
    )
    add_cli_flags(build)  # the load options' flags (load_options.OPTIONS)
    build.add_argument(
        "--into",
        metavar="PACKAGE_DIR",
        help="prebuild every kernel file under PACKAGE_DIR (or the PATHS inside it) into the "
        "package, next to its sources, so that its users need no compiler",
    )
    build.add_argument(
        "--platform",
        action="append",
        choices=tuple(BUILD_PLATFORMS),
        help="with --into: build only .cpp files (cpu) or only .cu files (cuda); repeatable",
    )
    return top


def _option(parse: Callable[[str], object]) -> Callable[[str], object]:
    """An option's value parser for argparse: its ValueError becomes argparse's usage error."""

    def parsed(raw: str) -> object:
        try:
            return parse(raw)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parsed


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo()


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_doctor

    report = run_doctor(compile_checks=not args.no_compile, require_build=args.require_build)
    print("brainevent doctor" + "\n".join(report.lines))
    return report.exit_code


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _skipped(count: int) -> str:
    return f"; {count} skipped (being built)" if count else ""


def _cmd_cache(args: argparse.Namespace) -> int:
    from .cache import admin, cache_root

    root = cache_root(args.cache_dir)
    if args.cache_dir is not None and not root.is_dir():  # a mistyped root is no empty cache
        print(f"brainevent cache: --cache-dir {root} does not exist: no cache there", file=sys.stderr)
        return 1
    if args.cache_command == "list":
        entries = list(admin.iter_entries(root))
        print(f"cache: {root}" + ("" if root.is_dir() else " (not created yet: nothing cached)"))
        for entry in entries:
            m, desc = entry.manifest, "DAMAGED"
            if m is not None:  # NVRTC entries list their kernels (name expressions), remembered runs a line
                names = m.functions or m.inputs.get("name_expressions") or [m.inputs.get("describe", "")]
                desc = f"{m.platform}, {', '.join(sorted(names))}"
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
            name = f"{entry.module}/{entry.directory.name}"
            print(f"  {name}  {_size(entry.size):>9}  last used {used}  [{desc}]")
        total = sum(e.size for e in entries) + admin.object_cache_size(root) if root.is_dir() else 0
        print(f"{len(entries)} entries, {_size(total)} including cached objects")
        return 0
    if args.cache_command == "info":
        entries = list(admin.iter_entries(root, args.name))
        if not entries:
            print(f"no cached entries for module {args.name!r} under {root}", file=sys.stderr)
            return 1
        for entry in entries:
            _print_entry(entry)
        return 0
    if args.cache_command == "clear":
        if args.name is None and not args.all and not _confirmed(f"remove every entry under {root}?"):
            print("brainevent cache clear: name a module, or --all to remove every entry", file=sys.stderr)
            return 2
        if args.name is not None and not any(True for _ in admin.iter_entries(root, args.name)):
            known = sorted({e.module for e in admin.iter_entries(root)}) if root.is_dir() else []
            print(
                f"no cached module {args.name!r} under {root}; nothing removed. Cached modules: "
                f"{', '.join(known) or 'none'} (`brainevent cache list` shows them)",
                file=sys.stderr,
            )
            return 1
        removed, skipped = admin.clear(root, args.name)
        print(f"removed {removed} entries{_skipped(skipped)}")
        return 0
    keep = args.keep_newest
    if args.max_size is None and args.older_than is None and keep is None:
        keep = 1  # the default: drop what edits and upgrades left behind
        print("no limit given: removing all but the newest version of each module's builds (--keep-newest 1)")
    if keep is not None and keep < 1:
        print(f"--keep-newest {keep}: keep at least 1 (`cache clear` removes everything)", file=sys.stderr)
        return 2
    removed, skipped, left = admin.prune(
        root, max_size=args.max_size, older_than=args.older_than, keep_newest=keep
    )
    print(f"removed {removed} entries, {_size(left)} left{_skipped(skipped)}")
    return 0


def _confirmed(question: str) -> bool:
    """A yes to ``question`` at a terminal; a script (no terminal) never answers."""
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    return interactive and input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _print_entry(entry: EntryInfo) -> None:
    print(f"{entry.module}/{entry.directory.name}")
    print(f"  directory   {entry.directory}")
    print(f"  size        {_size(entry.size)}")
    m = entry.manifest
    if m is None:
        print("  DAMAGED: manifest missing or unreadable; the next load rebuilds it")
        return
    print(f"  platform    {m.platform}")
    if "remembered" in m.inputs:  # a remembered benchmark result (custom_kernel/remembered.py)
        print(f"  remembered  {m.inputs.get('describe')}")
        return
    print(f"  artifact    {m.artifact} (sha256 {m.artifact_sha256[:16]})")
    built = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.created))
    print(f"  built       {built} in {m.build_seconds:.2f} s")
    # What tells this build from the entry's other builds (an NVRTC kernel's arch, names, options).
    variant = sorted(m.variant.items())
    chosen = ", ".join(f"{k}={v}" for k, v in variant if v not in (None, "", [], {}))
    print(f"  build       {chosen or '(default options)'}")
    for name, data in sorted(m.functions.items()):
        tokens = " ".join(f"attr.{p[1]}:{p[2]}" if p[0] == "attr" else p[0] for p in data["params"])
        print(f"  function    {name}: {tokens}  ({data.get('source_file')}:{data.get('line')})")
    from .platforms import platform_class

    described = platform_class(m.platform).describe_artifact(str(entry.directory / m.artifact), m.inputs)
    for label, value in described:
        if value:
            print(f"  {label:<11} {value}")


def _cmd_choices(args: argparse.Namespace) -> int:
    from .cache import cache_root
    from .custom_kernel import remembered

    root = cache_root(args.cache_dir)
    if args.action == "clear":
        removed = remembered.clear(root)
        print(f"removed {removed} remembered entries (choices and benchmark runs) from {root}")
    else:
        print("\n".join(remembered.describe(root)))
    return 0


def _cmd_ide(args: argparse.Namespace) -> int:
    from .ide import include_dirs, write_compile_commands

    directory = Path(args.directory)
    if not directory.is_dir():
        print(f"brainevent ide: {str(directory)!r} is not a directory of kernel files", file=sys.stderr)
        return 2
    path, count = write_compile_commands(
        directory, output=args.output, extra_flags=args.flag, cuda_arch=args.arch
    )
    print(f"wrote {path} ({count} file(s)); clangd reads it from there or a parent directory")
    for d in include_dirs():
        print(f"  include {d}")
    return 0


def _cmd_includes(args: argparse.Namespace) -> int:
    from .cache import cache_root
    from .ide import include_flags, write_cmake_config

    if args.cmake_dir is None:
        print(include_flags())
    else:
        print(write_cmake_config(args.cmake_dir or cache_root(args.cache_dir) / "cmake"))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from .stages.load import build

    if args.into is not None:
        from .bundle.command import build_into

        return build_into(args)
    if not args.paths:
        print("brainevent build: give kernel files or directories, or --into PACKAGE_DIR", file=sys.stderr)
        return 2

    failures = 0
    for raw in args.paths:
        try:
            for request in _build_requests(Path(raw), args):
                artifact = build(request)
                state = "built" if artifact.built_now else "already cached"
                print(f"{state}: {request.options.name} ({request.platform.name}) -> {artifact.library}")
        except Exception as exc:  # report every path, then fail
            failures += 1
            print(f"FAILED {raw}: {_for_the_shell(exc)}", file=sys.stderr)
    return 1 if failures else 0


def _for_the_shell(exc: Exception) -> str:
    """An error as a shell user acts on it: the GPU architecture is --arch, not compute_capability=."""
    from .errors import ArchError, GpuArchDetectionError

    if isinstance(exc, GpuArchDetectionError):
        return (
            f"cannot tell which GPU architecture to build for: no GPU was found ({exc.reason}). "
            "Name the target: --arch sm_90 (repeat for more: --arch sm_80 --arch sm_90), or set "
            "BRAINEVENT_CUDA_ARCH=sm_80,sm_90."
        )
    text = str(exc)
    if isinstance(exc, ArchError) and text.startswith("compute capability "):
        text = "--arch " + text.removeprefix("compute capability ")
    return re.sub(r"""compute_capability=(["'])(\w+)\1""", r"--arch \2", text)


def _build_requests(path: Path, args: argparse.Namespace) -> list[LoadRequest]:
    """What `brainevent build` builds for one path: the request a loader would make of it."""
    from .load_options import CPU, cli_keywords
    from .stages.request import inline_unit, make_request, name_from_path, paths_request

    # A device platform's language (the platform table) when the path is, or the folder holds, one.
    suffixes = {f.suffix for f in path.iterdir()} if path.is_dir() else {path.suffix}
    devices = [p for p, row in BUILD_PLATFORMS.items() if p != CPU and suffixes & set(row.suffixes)]
    platform = devices[0] if devices else CPU
    keywords = {**cli_keywords(args, platform), "build_directory": args.cache_dir, "verbose": args.verbose}
    by, suffix = "brainevent build", BUILD_PLATFORMS[platform].suffixes[0]  # who asks, as errors name it
    if path.is_dir() and platform == CPU:  # plain C++: each file is its own CPU module
        return [
            paths_request(CPU, by, f.resolve(), None, None, keywords) for f in sorted(path.glob(f"*{suffix}"))
        ]
    if not args.as_inline or path.is_dir():
        return [paths_request(platform, by, path, None, None, keywords, directory=path.is_dir())]
    name, parameter = name_from_path(path), "cpp_sources" if platform == CPU else f"{platform}_sources"
    return [
        make_request(platform, [inline_unit(name, path.read_text(), parameter, suffix)], name, None, keywords)
    ]


def _run(args: argparse.Namespace) -> int:
    args.cache_dir = getattr(args, "cache_dir", None)  # a Path, or None for the configured root
    if args.cache_dir is not None and args.command in ("doctor", "demo"):  # they read the configuration
        from .cache_control import set_cache_dir

        set_cache_dir(args.cache_dir)
    return int(globals()[f"_cmd_{args.command}"](args))  # each command's _cmd_<name>


# Exit statuses of the error boundary (argparse's usage errors exit with 2).
_FAILED, _PIPE_CLOSED, _INTERRUPTED = 1, 128 + 13, 128 + 2  # as a shell reports SIGPIPE, SIGINT


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .logs import show_on_stderr  # brainevent's records only: JAX's keep their own form

    show_on_stderr(logging.getLogger("brainevent"), logging.INFO if args.verbose else logging.WARNING)
    from .errors import BrainEventError

    # The one error boundary: what goes wrong is our message and an exit status, never a
    # traceback (a bug, any other exception, still shows one).
    try:
        status = _run(args)
        sys.stdout.flush()  # here, not at exit: a reader that left is seen below
        return status
    except BrainEventError as exc:  # our errors say what is wrong and how to fix it
        print(f"brainevent {args.command}: {exc}", file=sys.stderr)
        return _FAILED
    except BrokenPipeError:  # the reader left (`| head -1`): nothing more to say, to anyone
        with contextlib.suppress(OSError):  # nor at exit, when Python flushes stdout again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _PIPE_CLOSED
    except OSError as exc:  # a read-only checkout, a directory where a file goes, ...
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"brainevent {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return _FAILED
    except KeyboardInterrupt:
        print(f"brainevent {args.command}: interrupted", file=sys.stderr)
        return _INTERRUPTED
