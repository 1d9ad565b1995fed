"""Leave-one-shape-out: what dispatch would serve each shape with recorded studies if that shape
had not been tuned, scored with the times recorded on it.

    python -m autotune.dispatch loso --store STORE.json ... [--trials trials.csv ...] --out DIR

For each shape S with records: a Selector over every other shape's records chooses S's route
(first legal config with evidence, else the default; the vendor op where the peers' records say
so), exactly as a dispatcher would for an untuned S. The route is scored with S's own recorded
time for it: the vendor's (S's vendor_ms), the default's, or a borrowed config's where S's study
timed that config; where it did not, the outcome is unknown (never counted as a win).
Each rule of RULES is scored: `classes` (dispatch's: peers share the default or the shape
class; configs borrowed within the bucket only), the rules before it, which also served the
nearest tuned shapes' configs untimed (`classes, nearest`, until session 17; `same-default,
nearest`, peers sharing the default only, before classes.py), and `classes, nearest` with losses
on peers tolerated (what the no-loss check buys). CPU only: no GPU, no compile.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import math
import platform
from pathlib import Path

from ..errors import UserError
from ..spaces.base import Problem, SearchSpace
from ..store.format import ConfigStore, Entry, config_id
from .rules import DEFAULT, Selector
from .classes import gemm_class


@dataclasses.dataclass(frozen=True)
class Rule:
    """A dispatch rule scored: its Selector arguments, and whether the nearest tuned shapes'
    configs serve untimed (`nearest`)."""
    selector: dict
    nearest: bool = False


RULES = {"same-default, nearest": Rule({"shape_class": None}, nearest=True),
         "classes, nearest": Rule({"shape_class": gemm_class}, nearest=True),
         "classes": Rule({"shape_class": gemm_class}),
         "classes, nearest, losses tolerated": Rule(
             {"shape_class": gemm_class, "tolerate_losses": True}, nearest=True)}
COLUMNS = ["shape", "rule", "route", "from", "evidence", "chosen_ms", "default_ms", "vendor_ms",
           "best_ms", "vs_default", "vs_vendor"]


def trial_config(row: dict) -> dict:
    """A trials.csv row's config as the store writes it (ints, bools, strings; absent knobs
    dropped): its config_id then matches the store's."""
    out = {}
    for col, text in row.items():
        if not col.startswith("params_") or text in ("", "nan"):
            continue
        if text in ("True", "False"):
            value = text == "True"
        else:
            try:
                number = float(text)
                value = int(number) if number.is_integer() else number
            except ValueError:
                value = text
        out[col.removeprefix("params_")] = value
    return out


def trial_times(path: Path, added_knobs: dict | None = None
                ) -> dict[str, dict[str, tuple[float, dict]]]:
    """problem key -> {config_id: (fastest ms, config)} of the completed trials in an exported
    trials.csv (its `study` column: '<space>/<problem key>'); a knob of `added_knobs` that a
    row lacks (the space gained it after the study) takes the value every earlier config had."""
    out: dict[str, dict[str, tuple[float, dict]]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("state") != "COMPLETE" or not row.get("value"):
                continue
            times = out.setdefault(row["study"].split("/", 1)[1], {})
            config, ms = {**(added_knobs or {}), **trial_config(row)}, float(row["value"])
            cid = config_id(config)
            if cid not in times or ms < times[cid][0]:
                times[cid] = (ms, config)
    return out


def records(stores: list[ConfigStore], trials: list[Path], space: SearchSpace) -> dict[str, Entry]:
    """Every shape's records: the stores' entries (later stores override earlier ones), their
    `measured` completed with the trials.csv times; shapes with trials only (a study that never
    reached its final round) enter with their fastest trial, no vendor time."""
    timers = {s.header.timer for s in stores}
    if len(timers) > 1:
        raise UserError(f"the stores hold times of different timers ({', '.join(sorted(timers))}):"
                        " leave-one-out must compare one protocol's times")
    entries = {k: e for s in stores for k, e in s.entries.items()}
    for path in trials:
        for key, trials_of in trial_times(path, space.added_knobs).items():
            times = {cid: ms for cid, (ms, _) in trials_of.items()}
            e = entries.get(key)
            if e is not None:
                entries[key] = dataclasses.replace(e, measured={**times, **(e.measured or {})})
                continue
            best = min(times, key=times.get)
            default = config_id(space.default_config(Problem.from_key(key)))
            entries[key] = Entry(key, trials_of[best][1], times[best], times.get(default), None,
                                 f"{path.name} (trials only)", times)
    return entries


def route(selector: Selector, space: SearchSpace, problem: Problem, nearest: bool = False):
    """(choice, vendor evidence or None): what a dispatcher serves an untuned `problem` with
    (`nearest`: as it did while the nearest tuned shapes' configs served, rules.py)."""
    choice = next(c for c in selector.choices(problem, nearest)
                  if space.is_legal(c.config, problem) is not False)
    return choice, selector.vendor_faster(problem, choice.config)


def score(entries: dict[str, Entry], space: SearchSpace) -> list[dict]:
    """One row per shape and rule (RULES)."""
    everything = Selector(entries, space.op.bucket, space.default_config)
    rows = []
    for key in sorted(entries, key=lambda k: tuple(v for _, v in Problem.from_key(k).fields)):
        e, problem = entries[key], Problem.from_key(key)
        others = {k: v for k, v in entries.items() if k != key}
        default_ms = everything.default_ms(e)
        best_ms = min([*(e.measured or {}).values(), e.time_ms, e.vendor_ms or math.inf])
        for label, rule in RULES.items():
            sel = Selector(others, space.op.bucket, space.default_config, **rule.selector)
            choice, vendor = route(sel, space, problem, rule.nearest)
            if vendor:
                name, chosen, why = "vendor", e.vendor_ms, vendor
            elif choice.reason == DEFAULT:
                name, chosen, why = "default", default_ms, ""
            else:
                name, chosen, why = "borrowed", (e.measured or {}).get(config_id(choice.config)), \
                    choice.evidence
            rows.append({
                "shape": "x".join(str(problem[f]) for f in ("M", "N", "K")), "rule": label,
                "route": name, "from": choice.tuned or "", "evidence": why,
                "chosen_ms": chosen, "default_ms": default_ms, "vendor_ms": e.vendor_ms,
                "best_ms": best_ms,
                "vs_default": _ratio(default_ms, chosen), "vs_vendor": _ratio(e.vendor_ms, chosen)})
    return rows


def geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summary(rows: list[dict]) -> list[dict]:
    """Per rule: routes taken, how many were scored, geomeans and worst shapes; plus the
    default alone and the best recorded route (the ceiling) for reference."""
    shapes = list({r["shape"]: r for r in rows}.values())
    views = [("default only", [_served(r, "default", r["default_ms"]) for r in shapes])]
    views += [(f"dispatch, {rule}", [r for r in rows if r["rule"] == rule]) for rule in RULES]
    views += [("best recorded (ceiling)", [_served(r, "best", r["best_ms"]) for r in shapes])]
    return [_line(name, picked) for name, picked in views]


def _served(row: dict, route: str, ms: float | None) -> dict:
    """`row` as if `route`, of time `ms`, had served its shape."""
    return {**row, "route": route, "chosen_ms": ms, "vs_default": _ratio(row["default_ms"], ms),
            "vs_vendor": _ratio(row["vendor_ms"], ms)}


def _line(name: str, picked: list[dict]) -> dict:
    scored = [r for r in picked if r["chosen_ms"]]
    moved = [r for r in picked if r["route"] in ("borrowed", "vendor")]
    worst_d = min((r for r in scored if r["vs_default"]), key=lambda r: r["vs_default"])
    worst_v = min((r for r in scored if r["vs_vendor"]), key=lambda r: r["vs_vendor"])
    return {
        "what serves": name, "shapes": len(picked),
        "borrowed / vendor": (f"{sum(r['route'] == 'borrowed' for r in picked)} / "
                              f"{sum(r['route'] == 'vendor' for r in picked)}"),
        "scored (of those)": f"{sum(bool(r['chosen_ms']) for r in moved)} of {len(moved)}",
        "vs default": _fmt(geomean(r["vs_default"] for r in scored)),
        "vs cuBLAS": _fmt(geomean(r["vs_vendor"] for r in scored)),
        "below default": sum(r["vs_default"] < 1 for r in scored if r["vs_default"]),
        "worst vs default": f"{worst_d['shape']} {worst_d['vs_default']:.3f}",
        "worst vs cuBLAS": f"{worst_v['shape']} {worst_v['vs_vendor']:.3f}"}


def _ratio(a, b):
    return a / b if a and b else None


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def markdown(rows: list[dict]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def main(args) -> int:
    from ..spaces import get_space

    if not args.store:
        raise UserError("name at least one --store (the records to leave shapes out of)")
    missing = [p for p in [*args.store, *args.trials] if not Path(p).is_file()]
    if missing:
        raise UserError(f"no such file: {', '.join(missing)}")
    stores = [ConfigStore.read(p) for p in args.store]
    spaces = {s.header.space for s in stores}
    if len(spaces) > 1:
        raise UserError(f"the stores are of several spaces ({', '.join(sorted(spaces))})")
    space = get_space(spaces.pop())
    entries = records(stores, [Path(p) for p in args.trials], space)
    rows = score(entries, space)
    table = summary(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "loso.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    h = stores[0].header
    context = [f"date: {datetime.date.today()}",
               f"host: {platform.node()} (CPU only), Python {platform.python_version()}",
               f"records: {h.device}, timer {h.timer}, template {h.template}, "
               f"{len(entries)} shapes",
               "command: " + " ".join(["python -m autotune.dispatch", *args.argv])]
    text = "\n".join(context) + "\n\n" + markdown(table) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    return 0
