"""`autotune compare`: per shape, our kernel alone (the config dispatch picks) vs the hand-tuned
default vs the vendor op, and what dispatch delivers (that kernel or the vendor op), as a table,
plots and a Markdown report. Times come from the tuner's protocol (the one a study reports):
for a tuned shape the report sets the store's recorded time beside the one measured now.

    autotune compare gemm                   # measure on this GPU, shapes of its config store
    autotune compare gemm --shapes 16x4096x4096 ... --subset "M<=256"
    autotune compare gemm --block           # and each variant inside a decoder-like graph
    autotune compare gemm --from-store F    # no GPU: report the times recorded in a store file
"""

from __future__ import annotations

import argparse
import datetime
import operator
import platform
import re
from pathlib import Path
from typing import Iterator

from ..errors import UserError
from ..locations import results_dir
from ..runner.base import PROTOCOL
from ..runner.protocol import ROUNDS
from ..spaces.base import Problem
from ..store import ConfigStore
from ..store.compat import device_slug
from .report import Measurement, write_report



def add_compare_command(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("compare", help="tuned vs default vs vendor: table, plots, report",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", nargs="?",
                   help="kernel (default gemm: the space for this GPU) or space name; with "
                        "--from-store, the store's")
    p.add_argument("--store", help="config store file (default: the one for this GPU)")
    p.add_argument("--shapes", nargs="+",
                   help="shapes in the space's syntax (default: stored ones)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--artifacts", help="prebuilt kernel directory (default "
                   "$AUTOTUNE_ARTIFACTS, else ~/.cache/autotune/dispatch)")
    p.add_argument("--from-store", metavar="FILE", help="report the store's recorded times")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help="interleaved rounds (default: as many as a study's final round)")
    p.add_argument("--first-use", type=int, metavar="N",
                   help="time N configs and the vendor op on each shape the store does not "
                        "hold, as dispatch does where first-use tuning is on (default "
                        "$AUTOTUNE_FIRST_USE, else off)")
    p.add_argument("--block", action="store_true",
                   help="also time each variant inside a decoder-like CUDA graph (GEMM only): a "
                        "check of the protocol")
    p.add_argument("--subset", action="append", default=[], metavar="FIELD<=VALUE",
                   help="a geomean row over the shapes with FIELD <, <=, >, >= or == VALUE "
                        "(repeatable), e.g. M<=256")
    p.add_argument("--out", help="report directory (default "
                   "./autotune-results/compare/<space>/<gpu>)")
    p.set_defaults(func=compare_main)
    return p


def _from_store(path: str, kernel: str | None
                ) -> tuple[list[Measurement], int, dict[str, str], str, str]:
    from ..spaces import get_space

    from ..dispatch.rules import Selector

    store = ConfigStore.read(path)
    h = store.header
    if kernel and kernel not in (h.kernel, h.space):
        raise UserError(f"{path} is a store of {h.space} ({h.kernel}), not of {kernel}")
    try:
        space = get_space(h.space)
        flops = lambda e: space.flops(e.parsed_problem)  # noqa: E731
        selector = Selector(store.entries, space.op.bucket, space.default_config)
    except UserError:  # the plugin is not here: no TFLOP/s, times still compare
        flops, selector = (lambda e: 0.0), None  # noqa: E731

    def dispatched(e):  # what dispatch serves the stored shape with, by the recorded times
        if selector is None:
            return None
        return e.vendor_ms if selector.vendor_faster(e.parsed_problem, e.config) else e.time_ms

    rows = [Measurement(e.problem, flops(e), e.time_ms, e.default_ms, e.vendor_ms, "recorded",
                        dispatch_ms=dispatched(e), tuned_config=e.config)
            for e in store.sorted_entries()]
    context = {"source": f"times recorded in {path}", "times": h.provenance,
               "timer": h.timer or "not recorded (schema 1)", "device": h.device,
               "arch": h.arch, "driver / CUDA": f"{h.driver} / {h.cuda}", "TVM": h.tvm,
               "template": h.template}
    return rows, len(rows), context, h.space, h.device


def _measured(args) -> tuple[Iterator[Measurement], int, dict[str, str], str, str]:
    from ..store import current_gpu

    if current_gpu() is None:
        raise UserError("autotune compare measures on a GPU: no CUDA GPU here (report a store's "
                        "recorded times with --from-store FILE)")
    try:
        import torch
    except ImportError:
        raise UserError("autotune compare measures with torch: it is not installed "
                        "(or report a store's recorded times with --from-store FILE)") from None

    from ..dispatch import load
    from .measure import measure

    op = load(args.kernel or "gemm", store=args.store, artifacts=args.artifacts,
              first_use=args.first_use)
    space = op.space
    if args.shapes:
        try:
            problems = [space.parse_problem(s, args.dtype) for s in args.shapes]
        except ValueError as exc:
            raise UserError(f"--shapes: {exc}") from None
    else:
        problems = [op.selector.problems[k] for k in sorted(op.selector.problems)]
        problems.sort(key=lambda p: (p.dtype, tuple(v for _, v in p.fields)))
    if not problems:
        raise UserError("nothing to compare: no usable config store and no --shapes")
    device = torch.cuda.get_device_name(0)
    context = {"source": f"measured side by side in one run, {datetime.date.today()}",
               "timer": f"{PROTOCOL} (autotune/runner/protocol.py), {args.rounds} interleaved "
                        "rounds"
                        + (", and in a decoder-like graph (--block)" if args.block else ""),
               "device": device, "host": platform.node(), "torch": torch.__version__,
               "config store": op.store_path or "none usable (defaults)",
               "first use": (f"{op.first_use.count} configs and the vendor op timed, "
                             f"{op.first_use.rounds} rounds, on each shape the store lacks "
                             f"({op.first_use.path})" if op.first_use else "off"),
               "command": " ".join(["autotune", *getattr(args, "argv", ["compare"])])}

    def rows():  # one shape at a time, for compare_main to report each as it comes
        for problem in problems:
            row = measure(op, problem, rounds=args.rounds, block=args.block)
            print(f"measured {problem.key}: {row}", flush=True)
            yield row

    return rows(), len(problems), context, space.name, device


_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt,
        "==": operator.eq}


def parse_subset(text: str):
    """"M<=256" -> (label, problem key -> whether its M is <= 256)."""
    match = re.fullmatch(r"\s*(\w+)\s*(<=|<|>=|>|==)\s*(\d+)\s*", text)
    if not match:
        raise UserError(f"--subset {text!r}: expected FIELD<=VALUE (or <, >, >=, ==), e.g. M<=256")
    field, op, value = match.group(1), _OPS[match.group(2)], int(match.group(3))

    def member(key: str) -> bool:
        values = Problem.from_key(key).values
        if field not in values:
            raise UserError(f"--subset {text}: problems have no field {field!r} "
                            f"(fields: {', '.join(values)})")
        return op(values[field], value)

    return text.replace(" ", ""), member


def compare_main(args) -> int:
    import pandas as pd

    subsets = dict(parse_subset(s) for s in args.subset)
    rows, total, context, space_name, device = (_from_store(args.from_store, args.kernel)
                                                if args.from_store else _measured(args))
    out = Path(args.out) if args.out else results_dir("compare") / space_name / device_slug(device)
    title = f"{space_name} on {device}: our kernel, default, vendor and dispatch"
    done = []
    for row in rows:
        done.append(row)
        if len(done) < total:  # a run killed at a time limit keeps the shapes measured so far
            write_report(done, out, f"{title} (partial: {len(done)} of {total} shapes)", context,
                         subsets, plots=False)
    table = write_report(done, out, title, context, subsets)
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.4g}".format):
        print(table.drop(columns=["note", "tuned_config"]).to_string(index=False))
    print(f"report: {out / 'report.md'}")
    return 0
