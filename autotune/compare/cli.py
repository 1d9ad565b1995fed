"""`autotune compare`: tuned vs hand-tuned default vs vendor per shape, as a table, plots and a
Markdown report.

    autotune compare gemm                   # measure on this GPU, shapes of its config store
    autotune compare gemm --shapes 16x4096x4096 ...
    autotune compare gemm --from-store F    # no GPU: report the times recorded in a store file
"""

from __future__ import annotations

import argparse
import datetime
import platform
from pathlib import Path

from ..errors import UserError
from ..locations import results_dir
from ..store import ConfigStore
from ..store.compat import device_slug
from .report import Measurement, write_report



def add_compare_command(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("compare", help="tuned vs default vs vendor: table, plots, report",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", nargs="?",
                   help="kernel (default gemm: the space for this GPU) or space name; with "
                        "--from-store, the store's")
    p.add_argument("--store", help="config store file (default: the one for this GPU)")
    p.add_argument("--shapes", nargs="+", help="shapes in the space's syntax (default: stored ones)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--artifacts", help="prebuilt kernel directory (default "
                   "$AUTOTUNE_ARTIFACTS, else ~/.cache/autotune/dispatch)")
    p.add_argument("--from-store", metavar="FILE", help="report the store's recorded times")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--out", help="report directory (default "
                   "./autotune-results/compare/<space>/<gpu>)")
    p.set_defaults(func=compare_main)
    return p


def _from_store(path: str, kernel: str | None) -> tuple[list[Measurement], dict[str, str], str, str]:
    from ..spaces import get_space

    store = ConfigStore.read(path)
    h = store.header
    if kernel and kernel not in (h.kernel, h.space):
        raise UserError(f"{path} is a store of {h.space} ({h.kernel}), not of {kernel}")
    try:
        space = get_space(h.space)
        flops = lambda e: space.flops(e.parsed_problem)  # noqa: E731
    except UserError:  # the plugin is not here: no TFLOP/s, times still compare
        flops = lambda e: 0.0  # noqa: E731
    rows = [Measurement(e.problem, flops(e), e.time_ms, e.default_ms, e.vendor_ms, "recorded")
            for e in store.sorted_entries()]
    context = {"source": f"times recorded in {path}", "times": h.provenance, "device": h.device,
               "arch": h.arch, "driver / CUDA": f"{h.driver} / {h.cuda}", "TVM": h.tvm,
               "template": h.template}
    return rows, context, h.space, h.device


def _measured(args) -> tuple[list[Measurement], dict[str, str], str, str]:
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

    op = load(args.kernel or "gemm", store=args.store, artifacts=args.artifacts)
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
    rows = []
    for problem in problems:
        rows.append(measure(op, problem, rounds=args.rounds))
        print(f"measured {problem.key}: {rows[-1]}", flush=True)
    device = torch.cuda.get_device_name(0)
    context = {"source": f"measured side by side in one run, {datetime.date.today()}",
               "device": device, "host": platform.node(), "torch": torch.__version__,
               "config store": op.store_path or "none usable (defaults)"}
    return rows, context, space.name, device


def compare_main(args) -> int:
    import pandas as pd

    rows, context, space_name, device = (_from_store(args.from_store, args.kernel)
                                         if args.from_store else _measured(args))
    out = Path(args.out) if args.out else results_dir("compare") / space_name / device_slug(device)
    title = f"{space_name} on {device}: tuned vs default vs vendor"
    table = write_report(rows, out, title, context)
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.4g}".format):
        print(table.drop(columns=["note"]).to_string(index=False))
    print(f"report: {out / 'report.md'}")
    return 0
