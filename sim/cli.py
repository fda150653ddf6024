"""Command line of toolcall-sim."""

from __future__ import annotations

import argparse
import sys

from . import demo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolcall-sim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="replay a task retry and an agent restart against the agent model")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo.main(sys.stdout)
    return 2
