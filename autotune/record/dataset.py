"""A recording on disk: `recording.csv` (one row per measured config: problem, source, the
knobs, median time over the rounds with its spread, or the failure's cause) - the replayed
runner's table as is (`autotune tune --simulate recording.csv`) - and `recording.json` (where,
when, with what and how: device, versions, timer, command, and per shape the legal space's
size, how the sample was drawn and the vendor's time), summarised in `recording.md`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd

from ..spaces.base import Config, Problem, SearchSpace

CSV, META, SUMMARY = "recording.csv", "recording.json", "recording.md"
# A row's measurement: median and spread over its rounds and the warm-up each timing had
# (a recording may merge runs under different warm-ups), or the failure's cause.
SPREAD = ["time_ms", "min_ms", "max_ms", "rounds", "warm_ms", "cause"]


def row_config(choices_by_text: dict[str, dict[str, object]], row,
               added_knobs: dict | None = None) -> Config | None:
    """A CSV row's knob cells as the space's values (`choices_by_text`: per knob, str(value)
    -> value), or None if a cell holds a value the space does not have. A knob the row lacks
    takes its value from `added_knobs` (the space gained it after the recording)."""
    added = added_knobs or {}
    missing = [k for k in choices_by_text if k not in row and k not in added]
    if missing:
        raise ValueError(f"the recording has no column for the space's knob(s) {missing}, and "
                         f"the space does not name them as added later (added_knobs): it was "
                         f"made with another space")
    texts = {k: str(row[k] if k in row else added[k]) for k in choices_by_text}
    if any(texts[k] not in choices_by_text[k] for k in choices_by_text):
        return None
    return {k: choices_by_text[k][texts[k]] for k in choices_by_text}


def choices_by_text(space: SearchSpace, problem: Problem) -> dict[str, dict[str, object]]:
    """Per knob, its values by their text in a CSV."""
    from ..spaces.sampling import _choices

    return {k: {str(c): c for c in values} for k, values in _choices(space, problem, None).items()}


@dataclasses.dataclass
class Recording:
    """Rows (every shape) and their header."""

    frame: pd.DataFrame
    meta: dict

    def __post_init__(self):
        """Columns in the recording's order: problem, source, the knobs, the time and spread."""
        knobs = [c for c in self.frame.columns if c not in ("problem", "source", *SPREAD)]
        self.frame = self.frame.reindex(columns=["problem", "source", *knobs, *SPREAD])

    @property
    def problems(self) -> list[str]:
        return list(dict.fromkeys(self.frame["problem"]))

    def knobs(self) -> list[str]:
        return [c for c in self.frame.columns if c not in ("problem", "source", *SPREAD)]

    def of(self, problem_key: str) -> pd.DataFrame:
        return self.frame[self.frame["problem"] == problem_key].reset_index(drop=True)

    def timed(self, space: SearchSpace, problem: Problem, within_percent: float | None = None
              ) -> list[tuple[str, Config]]:
        """(source, config) of the problem's timed rows, fastest first; with `within_percent`,
        only those within that much of its fastest."""
        rows = self.of(problem.key)
        rows = rows[rows["time_ms"].notna()].sort_values("time_ms", kind="stable")
        if within_percent is not None and len(rows):
            rows = rows[rows["time_ms"] <= rows["time_ms"].iloc[0] * (1 + within_percent / 100)]
        by_text = choices_by_text(space, problem)
        out = [(row["source"], row_config(by_text, row, space.added_knobs))
               for _, row in rows.iterrows()]
        return [(s, c) for s, c in out if c is not None]

    @classmethod
    def read(cls, path: str | Path) -> "Recording":
        """A recording's directory (or its CSV, with the JSON beside it)."""
        path = Path(path)
        folder = path if path.is_dir() else path.parent
        csv = path if path.suffix == ".csv" else folder / CSV
        if not csv.exists():
            raise FileNotFoundError(f"no recording at {path} (expected {csv})")
        meta_path = folder / META
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        return cls(pd.read_csv(csv, keep_default_na=True), meta)

    def write(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.frame.to_csv(folder / CSV, index=False)
        (folder / META).write_text(json.dumps(self.meta, indent=1, default=str) + "\n")
        (folder / SUMMARY).write_text(summary(self))
        return folder


def summary(recording: Recording) -> str:
    """What the recording holds, per shape, in Markdown."""
    meta = recording.meta
    lines = [f"# Recording of {meta.get('space', '?')}", ""]
    if meta.get("note"):
        lines += [meta["note"], ""]
    lines += [f"- {k}: {meta[k]}" for k in ("device", "date", "timer", "command", "template",
                                             "versions") if meta.get(k)]
    lines += ["", "| problem | legal space | rows by source | timed | by warm-up (ms) | failed | "
              "best ms | default ms | vendor ms | best config |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    knobs = recording.knobs()
    for problem in recording.problems:
        rows = recording.of(problem)
        info = meta.get("problems", {}).get(problem, {})
        timed = rows[rows["time_ms"].notna()]
        failed = rows[rows["time_ms"].isna()]["cause"].value_counts().to_dict()
        default = timed[timed["source"] == "default"]["time_ms"]
        best = timed.loc[timed["time_ms"].idxmin()] if len(timed) else None
        sources = info.get("sample") or ", ".join(
            f"{k} {v}" for k, v in rows["source"].value_counts(sort=False).items())
        vendor = info.get("vendor_ms")
        warm = ", ".join(f"{k:g}: {v}" for k, v in
                         timed["warm_ms"].value_counts(sort=False).sort_index().items()) or "-"
        cells = [problem, info.get("legal_space", "?"), sources, len(timed), warm,
                 ", ".join(f"{k} {v}" for k, v in failed.items()) or 0,
                 f"{best['time_ms']:.5g}" if best is not None else "-",
                 f"{default.iloc[0]:.5g}" if len(default) else "-",
                 f"{vendor:.5g}" if vendor else "-",
                 ", ".join(f"{k}={best[k]}" for k in knobs) if best is not None else "-"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
