"""python -m autotune.dispatch prebuild: compile, where TVM is, the kernels a GPU machine's
dispatcher needs for the given shapes (and every stored shape), into an artifact directory.

python -m autotune.dispatch pack DIR OUT.tar.xz: that directory as one archive, to carry to a
GPU machine (--artifacts, $AUTOTUNE_ARTIFACTS and autotune.load read it as they read a
directory); python -m autotune.dispatch unpack OUT.tar.xz prints where it was unpacked.

python -m autotune.dispatch loso: leave-one-shape-out scoring of dispatch's choice for untuned
shapes on recorded studies (loso.py); CPU only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UserError
from ..spaces import get_space
from ..locations import artifacts_dir, store_root
from ..store import ConfigStore, store_path
from .artifacts import ARCHIVE_SUFFIX, ArtifactIndex, open_artifacts, pack
from .prebuild import prebuild


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autotune.dispatch", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prebuild", help="build kernels for shapes into an artifact directory")
    p.add_argument("--space", default="gemm_sm90")
    p.add_argument("--device", action="append", default=[],
                   help="GPU model whose store picks the configs (repeatable), e.g. 'NVIDIA H200'")
    p.add_argument("--store", action="append", default=[], help="store file (repeatable)")
    p.add_argument("--shapes", nargs="*", default=[], help="shapes in the space's syntax")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--no-stored", action="store_true", help="skip the stores' own shapes")
    p.add_argument("--out", help="artifact directory (default $AUTOTUNE_ARTIFACTS, else "
                   "~/.cache/autotune/dispatch)")
    p.add_argument("--procs", type=int, default=1, help="compile processes (default 1)")
    p.add_argument("--first-use", type=int, default=0, metavar="N",
                   help="also the N configs first-use tuning times on each shape no store "
                        "holds (autotune.load(first_use=N))")
    pk = sub.add_parser("pack", help="an artifact directory as one .tar.xz archive")
    pk.add_argument("directory")
    pk.add_argument("archive")
    up = sub.add_parser("unpack", help="unpack an archive once (per content) and print its "
                        "directory")
    up.add_argument("archive")
    lo = sub.add_parser("loso", help="score dispatch on each recorded shape left out of the "
                        "records (CPU only)")
    lo.add_argument("--store", action="append", default=[],
                    help="store file with the records (repeatable; later ones override)")
    lo.add_argument("--trials", action="append", default=[],
                    help="a study's exported trials.csv (repeatable)")
    lo.add_argument("--out", required=True, help="directory for loso.csv and summary.md")
    args = parser.parse_args(argv)
    if args.command == "loso":
        from .loso import main as loso_main

        args.argv = list(sys.argv[1:] if argv is None else argv)
        try:
            return loso_main(args)
        except UserError as exc:
            print(f"python -m autotune.dispatch loso: error: {exc}", file=sys.stderr)
            return 2

    if args.command in ("pack", "unpack"):
        try:
            if args.command == "unpack":
                print(open_artifacts(args.archive))
                return 0
            count = pack(args.directory, args.archive)
        except UserError as exc:
            print(f"python -m autotune.dispatch {args.command}: error: {exc}", file=sys.stderr)
            return 2
        size = Path(args.archive).stat().st_size
        print(f"{args.archive}: {count} kernels, {size / 2**20:.2f} MiB", file=sys.stderr)
        return 0
    if args.out and args.out.endswith(ARCHIVE_SUFFIX):
        parser.error(f"--out {args.out}: prebuild writes a directory; `python -m "
                     f"autotune.dispatch pack DIR {args.out}` then makes the archive")
    space = get_space(args.space)
    paths = [Path(s) for s in args.store] + [store_path(store_root(), space.name, d)
                                             for d in args.device]
    stores = []
    for path in paths:
        if path.exists():
            stores.append(ConfigStore.read(path))
        else:
            print(f"no store {path}: that GPU gets defaults", file=sys.stderr)
    problems = [space.parse_problem(s, args.dtype) for s in args.shapes]
    failures = prebuild(space, stores, problems, ArtifactIndex(args.out or artifacts_dir()),
                        with_stored=not args.no_stored, first_use=args.first_use,
                        procs=args.procs)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
