"""`autotune record` and `autotune record-ingest`: a recording of a search space, compiled here
and measured on a GPU machine that needs only torch and cuda-bindings.

    autotune record gemm_sm90 --shapes 64x28672x4096 --sample 400 --bundle B   # here: plan, compile
    python -m autotune.record.measure B OUT --rounds 3                         # GPU: validate, time
    autotune record-ingest B OUT --out studies/<date>-<device>-recording       # the dataset

Each step resumes where a killed run stopped."""

from __future__ import annotations

import json
import sys

from ..errors import UserError

DEFAULT_SAMPLE = 400


def add_record_commands(sub) -> None:
    p = sub.add_parser("record", help="plan and compile a recording of a space (resumable): "
                                      "a uniform sample of its legal configs and the "
                                      "neighbourhood of the best known, per shape",
                       description=__doc__)
    p.add_argument("space", help="a registered space (see `autotune spaces`) or module:Class")
    p.add_argument("--shapes", nargs="+", help="shapes in the space's syntax (default: its own)")
    p.add_argument("--dtype", help="element type (default: the space's)")
    p.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                   help=f"legal configs drawn uniformly per shape (default {DEFAULT_SAMPLE})")
    p.add_argument("--seed", type=int, default=0, help="the uniform sample's seed (default 0)")
    p.add_argument("--centre", action="append", default=[], metavar="JSON",
                   help="a config (JSON object) whose legal one-knob neighbours are recorded "
                        "too, e.g. the best of an earlier sweep (repeatable; the default is "
                        "always one)")
    p.add_argument("--centre-best", metavar="MEASURED",
                   help="also the neighbourhood of each shape's fastest config measured so far "
                        "(the directory `python -m autotune.record.measure` wrote for --bundle)")
    p.add_argument("--no-start", action="store_true",
                   help="plan neither the default and seeds nor the default's neighbourhood: "
                        "only what the other options ask for (to add to a recording)")
    p.add_argument("--retime", metavar="RECORDING",
                   help="measure again the timed configs this recording holds for the shapes "
                        "(fastest first, their sources kept), e.g. under another warm-up")
    p.add_argument("--retime-within", type=float, metavar="PERCENT",
                   help="with --retime: only those within PERCENT of the shape's recorded best")
    p.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a parameter (repeatable)")
    p.add_argument("--bundle", required=True, help="directory of the compiled plan")
    p.add_argument("--pack", metavar="FILE.tar.xz",
                   help="also write the bundle as one archive, to carry to a GPU machine")
    p.add_argument("--cache-dir", help="compile cache directory (default: tirx's)")
    p.add_argument("--processes", type=int, default=1,
                   help="compile worker processes (default 1)")
    p.set_defaults(func=record_main)

    q = sub.add_parser("record-ingest", help="read a measured bundle into a recording "
                                             "(recording.csv, .json, .md)")
    q.add_argument("bundle", help="the bundle `autotune record` compiled")
    q.add_argument("measured", help="the directory `python -m autotune.record.measure` wrote")
    q.add_argument("--out", required=True, help="the recording's directory")
    q.add_argument("--note", default="", help="a sentence for the recording's header")
    q.add_argument("--merge", action="store_true",
                   help="--out holds a recording: add these measurements to it (a config in "
                        "both takes its new times and keeps its source; the header keeps both)")
    q.set_defaults(func=ingest_main)


def record_main(args) -> int:
    from ..arguments import fixed_params, parse_shapes
    from ..spaces import get_space
    from .bundle import compile_bundle, pack, plan, write_header

    if args.sample < 0 or args.processes < 1:
        raise UserError("--sample must not be negative, --processes at least 1")
    if args.retime_within is not None and (args.retime is None or args.retime_within < 0):
        raise UserError("--retime-within needs --retime and a percentage not below 0")
    space = get_space(args.space)
    problems = parse_shapes(space, args.shapes, args.dtype)
    fixed = fixed_params(space, problems, args.fix)
    centres = []
    for text in args.centre:
        try:
            centre = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"--centre {text!r} is not JSON: {exc}") from None
        if not isinstance(centre, dict):
            raise UserError(f"--centre {text!r} is not a JSON object of knob values")
        centres.append(centre)
    best = {}
    if args.centre_best:
        from .ingest import fastest_configs

        try:
            best = fastest_configs(args.bundle, args.centre_best)
        except OSError as exc:
            raise UserError(f"--centre-best: cannot read the measured bundle: {exc}") from None
    recorded = None
    if args.retime:
        from .dataset import Recording

        try:
            recorded = Recording.read(args.retime)
        except (OSError, ValueError) as exc:
            raise UserError(f"--retime: cannot read the recording: {exc}") from None
    jobs, header = [], {}
    for problem in problems:
        for centre in centres:
            broken = space.violations({**centre, **fixed}, problem)
            if broken:
                raise UserError(f"--centre {json.dumps(centre)} is illegal for {problem.key}: "
                                + "; ".join(broken))
        default = [] if args.no_start else [space.default_config(problem)]
        own = [best[problem.key]] if best.get(problem.key) not in (None, *centres, *default) \
            else []  # the fastest is a centre already: its neighbourhood is planned
        retime = recorded.timed(space, problem, args.retime_within) if recorded else []
        planned, header[problem.key] = plan(space, problem, args.sample, args.seed,
                                            [*centres, *default, *own], fixed,
                                            start=not args.no_start, retime=retime)
        jobs += [(problem, source, config) for source, config in planned]
    write_header(args.bundle, space, header, " ".join(["autotune", *args.argv]))

    def progress(job):
        print(f"{job['problem']} {job['source']}: {job.get('cause', 'compiled')}",
              file=sys.stderr)

    compile_bundle(space, jobs, args.bundle, args.cache_dir, progress, processes=args.processes)
    if args.pack:
        print(f"packed: {pack(args.bundle, args.pack)}")
    print(f"{len(jobs)} jobs over {len(problems)} shapes in {args.bundle}; measure with\n"
          f"  python -m autotune.record.measure {args.bundle} OUT --rounds 3")
    return 0


def ingest_main(args) -> int:
    from .dataset import Recording
    from .ingest import ingest, merge

    try:
        recording = ingest(args.bundle, args.measured, args.note)
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"cannot read the measured bundle: {exc}") from None
    if args.merge:
        try:
            recording = merge(Recording.read(args.out), recording)
        except (OSError, ValueError) as exc:
            raise UserError(f"--merge: {exc}") from None
    folder = recording.write(args.out)
    print(f"{len(recording.frame)} rows over {len(recording.problems)} shapes -> "
          f"{folder}/recording.csv, .json, .md")
    return 0
