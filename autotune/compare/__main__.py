"""python -m autotune.compare ...: the same as `autotune compare ...`."""

import argparse
import sys

from ..errors import UserError
from .cli import add_compare_command


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autotune")
    add_compare_command(parser.add_subparsers(dest="command", required=True))
    argv = ["compare", *(sys.argv[1:] if argv is None else argv)]
    args = parser.parse_args(argv)
    args.argv = argv  # the report's command line
    try:
        return args.func(args)
    except UserError as exc:
        print(f"autotune compare: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
