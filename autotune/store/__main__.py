"""python -m autotune.store export|merge|show|restamp|retime|stale: studies -> store files,
merging, inspection, carrying a store over to a template whose change left its kernels alone, or
to the timing protocol from `autotune compare`'s tables, and which entries a new default made
stale."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..locations import store_root
from . import ConfigStore, Gpu, current_gpu, merge, merge_into, store_path


def cmd_export(args) -> int:
    from ..spaces import get_space
    from ..study import open_storage
    from .export import store_from_studies

    space = get_space(args.space)
    gpu = current_gpu()
    if args.device:
        gpu = Gpu(arch=space.arch, device=args.device, driver=args.driver, cuda=args.cuda)
    elif gpu is None:
        raise UserError("no GPU here: pass --device (the GPU model the studies ran on)")
    tvm_version = ""
    try:
        import tvm

        tvm_version = tvm.__version__
    except ImportError:
        pass
    store = store_from_studies(open_storage(args.storage), space, gpu, tvm_version)
    path = args.out or store_path(args.root or store_root(), space.name, gpu.device)
    merged = merge_into(path, store)
    print(f"{path}: {len(store.entries)} exported, {len(merged.entries)} in the store")
    return 0


def cmd_merge(args) -> int:
    stores = [ConfigStore.read(p) for p in args.files]
    merged = merge(stores, args.files)
    merged.write(args.out)
    print(f"{args.out}: {len(merged.entries)} entries from {len(stores)} files")
    return 0


def cmd_show(args) -> int:
    store = ConfigStore.read(args.file)
    print(store.header)
    for e in store.sorted_entries():
        ratio = f" ({e.default_ms / e.time_ms:.2f}x default)" if e.default_ms else ""
        print(f"{e.problem}: {e.time_ms:.4g} ms{ratio} {e.config}")
    return 0


def cmd_restamp(args) -> int:
    from ..spaces import get_space
    from .restamp import digests_at, restamp

    store = ConfigStore.read(args.file)
    before = digests_at(args.since, args.file)
    restamp(store, get_space(store.header.space), before).write(args.file)
    print(f"{args.file}: {len(store.entries)} entries build the same kernels as at {args.since}; "
          f"template {store.header.template} -> {ConfigStore.read(args.file).header.template}")
    return 0


def cmd_retime(args) -> int:
    from ..spaces import get_space
    from .retime import read_tables, retime

    store = ConfigStore.read(args.file)
    out = retime(store, get_space(store.header.space), read_tables(args.tables), args.partial)
    out.write(args.out or args.file)
    timed = sorted(k for k, e in out.entries.items() if e is not store.entries[k])
    lost = [k for k in timed if out.entries[k].config != store.entries[k].config]
    print(f"{args.out or args.file}: {len(timed)} of {len(out.entries)} entries re-timed "
          f"({out.header.timer}); {len(lost)} took today's default: {', '.join(lost) or 'none'}")
    return 0


def cmd_stale(args) -> int:
    from ..spaces import get_space
    from .retime import stale_keys

    store = ConfigStore.read(args.file)
    keys = stale_keys(store, get_space(store.header.space))
    part, _, parts = (args.part or "1/1").partition("/")
    if not (part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts)):
        raise UserError(f"--part {args.part!r}: expected K/N with 1 <= K <= N, e.g. 2/3")
    mine = keys[int(part) - 1::int(parts)]
    print(*mine, sep="\n")
    print(f"{len(keys)} of {len(store.entries)} entries never timed today's default"
          + (f"; part {part}/{parts}: {len(mine)}" if args.part else ""), file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autotune.store", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="each study's pick (its final round's winner, else "
                                           "its fastest trial) -> the space's store file")
    export.add_argument("--space", required=True)
    export.add_argument("--storage", required=True, help="Optuna storage URL of the studies")
    export.add_argument("--device", help="GPU model the studies ran on (default: this GPU)")
    export.add_argument("--driver", default="", help="with --device: its driver version")
    export.add_argument("--cuda", default="", help="with --device: its CUDA version")
    export.add_argument("--root",
                        help="store root (default $AUTOTUNE_STORES, else ./studies/configs)")
    export.add_argument("--out", help="store file (default <root>/<space>/<device>.json)")
    merge_p = sub.add_parser("merge", help="merge store files; the faster entry per shape wins")
    merge_p.add_argument("files", nargs="+")
    merge_p.add_argument("--out", required=True)
    show = sub.add_parser("show", help="print a store file")
    show.add_argument("file")
    restamp_p = sub.add_parser("restamp", help="give a store this template's hash if every "
                               "entry builds the same kernel as under an earlier revision's")
    restamp_p.add_argument("file")
    restamp_p.add_argument("--since", required=True,
                           help="git revision whose template the store was measured with")
    retime_p = sub.add_parser("retime", help="the store's times from `autotune compare` tables "
                              "of its shapes (the timing protocol's); a config that lost to "
                              "today's default gives way to it")
    retime_p.add_argument("file")
    retime_p.add_argument("--tables", nargs="+", required=True, help="compare's table.csv files")
    retime_p.add_argument("--out", help="store file to write (default: FILE itself)")
    retime_p.add_argument("--partial", action="store_true",
                          help="re-time only the entries the tables hold (e.g. `stale`'s); "
                               "the others keep their times (a store under the protocol)")
    stale_p = sub.add_parser("stale", help="the entries that never timed today's default for "
                             "their shape (a default rule changed since), one key a line: "
                             "shapes for `autotune compare --shapes`, then `retime --partial`")
    stale_p.add_argument("file")
    stale_p.add_argument("--part", metavar="K/N",
                         help="every N-th of them from the K-th: compare them over N calls or GPUs")
    args = parser.parse_args(argv)
    try:
        return {"export": cmd_export, "merge": cmd_merge, "show": cmd_show,
                "restamp": cmd_restamp, "retime": cmd_retime,
                "stale": cmd_stale}[args.command](args)
    except (UserError, FileNotFoundError) as exc:  # both name what the user got wrong
        print(f"autotune.store: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
