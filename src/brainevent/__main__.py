"""Command line: ``python -m brainevent <command>`` (also the ``brainevent`` script)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brainevent", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log build steps to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="compile and run a kernel on the best platform present")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="[brainevent] %(message)s"
    )
    if args.command == "demo":
        from .demo import run_demo

        return run_demo()
    return 2


if __name__ == "__main__":
    sys.exit(main())
