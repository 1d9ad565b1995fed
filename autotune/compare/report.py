"""Our kernel alone (tuned) vs the hand-tuned default vs the vendor op, and what dispatch
delivers, per shape: a pandas table with TFLOP/s, ratios and geomeans, matplotlib plots (PNG,
Agg: no display needed) and a Markdown report. Fed by measurements (measure.py on a GPU, or the
times recorded in a config store)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Callable

import pandas as pd

# tuned: our kernel alone (the config dispatch picks for the shape, whatever the vendor op
# does); dispatch: what a call gets (that kernel, or the vendor op where dispatch routes there).
VARIANTS = ("tuned", "default", "vendor", "dispatch")
RATIOS = (("tuned", "default"), ("tuned", "vendor"), ("dispatch", "default"),
          ("dispatch", "vendor"))
GEOMEAN = "geomean"
TEXT_COLUMNS = ("problem", "note", "tuned_config")


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Median times (ms) of one shape; None where a variant could not run."""

    problem: str
    flops: float
    tuned_ms: float | None
    default_ms: float | None
    vendor_ms: float | None
    note: str = ""  # e.g. which config ran, or why a variant is missing
    dispatch_ms: float | None = None
    # the time the store records for this shape's tuned entry (its study's reported winner)
    recorded_ms: float | None = None
    block: dict[str, float] | None = None  # variant -> ms inside a decoder-like graph (block.py)
    # more baselines beside the vendor (Op.other_vendors: attention's "fa2"), ms by name
    others: dict[str, float] = dataclasses.field(default_factory=dict)
    # the config of "tuned" (what dispatch picked: a store's entry, first use's pick, the
    # default), so a table says what ran and can be re-run
    tuned_config: dict | None = None


def _geomean(values: pd.Series) -> float:
    values = values.dropna()
    values = values[values > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if len(values) else math.nan


def _ratio(num, den):
    return num / den if num and den else None


def comparison_table(measurements: list[Measurement],
                     subsets: dict[str, Callable[[str], bool]] | None = None) -> pd.DataFrame:
    """One row per shape, then a geomean row over all of them and one per subset (label ->
    which problem keys). Ratios > 1 mean the first-named variant is faster; tuned_vs_recorded is
    the store's time over the one measured here (1: the study's report holds)."""
    rows = []
    blocks = sorted({v for m in measurements for v in (m.block or {})},
                    key=VARIANTS.index)
    for m in measurements:
        row = {"problem": m.problem}
        for v in VARIANTS:
            ms = getattr(m, f"{v}_ms")
            row[f"{v}_ms"] = ms
            row[f"{v}_tflops"] = m.flops / ms / 1e9 if ms and m.flops else None
        for a, b in RATIOS:
            row[f"{a}_vs_{b}"] = _ratio(getattr(m, f"{b}_ms"), getattr(m, f"{a}_ms"))
        row["recorded_ms"] = m.recorded_ms
        row["tuned_vs_recorded"] = _ratio(m.recorded_ms, m.tuned_ms)
        for v in blocks:
            row[f"{v}_block_ms"] = (m.block or {}).get(v)
        if "vendor" in blocks:
            for v in blocks:
                if v != "vendor":
                    row[f"{v}_vs_vendor_block"] = _ratio((m.block or {}).get("vendor"),
                                                         (m.block or {}).get(v))
        for name, ms in m.others.items():
            row.update({f"{name}_ms": ms, f"{name}_tflops": m.flops / ms / 1e9 if m.flops else None,
                        f"tuned_vs_{name}": _ratio(ms, m.tuned_ms)})
        row["note"] = m.note
        row["tuned_config"] = (json.dumps(m.tuned_config, sort_keys=True, separators=(",", ":"))
                               if m.tuned_config is not None else "")
        rows.append(row)
    others = list(dict.fromkeys(name for m in measurements for name in m.others))
    columns = (["problem"] + [f"{v}_{unit}" for v in VARIANTS for unit in ("ms", "tflops")]
               + [f"{a}_vs_{b}" for a, b in RATIOS] + ["recorded_ms", "tuned_vs_recorded"]
               + [f"{v}_block_ms" for v in blocks]
               + ([f"{v}_vs_vendor_block" for v in blocks if v != "vendor"]
                  if "vendor" in blocks else [])
               + [c for n in others for c in (f"{n}_ms", f"{n}_tflops", f"tuned_vs_{n}")]
               + ["note", "tuned_config"])
    table = pd.DataFrame(rows, columns=columns)
    numeric = [c for c in table.columns if c not in TEXT_COLUMNS]
    table[numeric] = table[numeric].astype(float)
    # Geomeans of rates and ratios only: a geomean of times over different shapes means nothing.
    rates = [c for c in numeric if not c.endswith("_ms")]
    summary = [{**{c: _geomean(table[c]) for c in rates}, "problem": GEOMEAN, "note": "",
                "tuned_config": ""}]
    for label, member in (subsets or {}).items():
        part = table[table.problem.map(member)]
        summary.append({**{c: _geomean(part[c]) for c in rates}, "problem": f"{GEOMEAN} {label}",
                        "note": f"{len(part)} shapes", "tuned_config": ""})
    return pd.concat([table, pd.DataFrame(summary)], ignore_index=True)


def _short(problem: str) -> str:
    """"M=16,N=4096,K=4096,dtype=bfloat16" -> "16x4096x4096"; plot labels must be short."""
    sizes = [item.split("=", 1)[1] for item in problem.split(",") if not item.startswith("dtype=")]
    return "x".join(sizes) if sizes else problem


def _is_summary(problem: str) -> bool:
    return problem.startswith(GEOMEAN)


def write_plots(table: pd.DataFrame, out_dir: Path, title: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = table[~table.problem.map(_is_summary)]
    labels = [_short(p) for p in shapes.problem]

    def grouped_bars(name: str, columns: dict[str, str], ylabel: str, subtitle: str,
                     unit_line: bool = False) -> Path:
        """One bar per column and shape, side by side; saved as out_dir/name."""
        width = 0.8 / len(columns)
        fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(labels) + 2), 4.5))
        offset = (len(columns) - 1) / 2
        for i, (col, label) in enumerate(columns.items()):
            ax.bar([j + (i - offset) * width for j in range(len(labels))],
                   shapes[col].fillna(0), width, label=label)
        if unit_line:
            ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(range(len(labels))), labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
        fit_title(fig, ax, f"{title}: {subtitle}")
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=120)
        plt.close(fig)
        return out_dir / name

    return [grouped_bars("tflops.png", {f"{v}_tflops": LABELS[v] for v in VARIANTS}, "TFLOP/s",
                         "throughput per shape"),
            grouped_bars("ratios.png", {f"{a}_vs_{b}": f"{LABELS[a]} / {b}" for a, b in RATIOS},
                         "speed-up (x)", "over the default and the vendor", unit_line=True)]


LABELS = {"tuned": "our kernel alone", "default": "default", "vendor": "vendor",
          "dispatch": "dispatch"}


def fit_title(fig, ax, text: str) -> None:
    """Set the axes' title, wrapped onto more lines where one would run past the figure."""
    import textwrap

    ax.set_title(text, fontsize=10)
    fig.canvas.draw()
    box = ax.title.get_window_extent()
    if box.width > 0.85 * fig.bbox.width:  # the axes sit off-centre: keep a margin
        width = max(20, int(len(text) * 0.85 * fig.bbox.width / box.width))
        ax.set_title("\n".join(textwrap.wrap(text, width)), fontsize=10)


def _cell(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def markdown_table(table: pd.DataFrame) -> str:
    """A GitHub Markdown table (no `tabulate` dependency, which the GPU machines lack)."""
    columns = [("problem", "shape", None), ("tuned_tflops", "ours TFLOP/s", 1),
               ("vendor_tflops", "vendor TFLOP/s", 1)]
    columns += [(f"{v}_ms", f"{LABELS[v]} ms", 4) for v in VARIANTS]
    columns += [(f"{a}_vs_{b}", f"{LABELS[a]} / {b}", 3) for a, b in RATIOS]
    if table["recorded_ms"].notna().any():
        columns += [("recorded_ms", "study's ms", 4), ("tuned_vs_recorded", "study / measured", 3)]
    columns += [(c, c.replace("_", " "), 4 if c.endswith("_ms") else 3)
                for c in table.columns if "_block" in c]
    others = [c.removesuffix("_tflops") for c in table.columns
              if c.endswith("_tflops") and c.removesuffix("_tflops") not in VARIANTS]
    columns += [c for n in others for c in ((f"{n}_tflops", f"{n} TFLOP/s", 1),
                                            (f"tuned_vs_{n}", f"ours / {n}", 3))]
    columns.append(("note", "note", None))
    lines = ["| " + " | ".join(title for _, title, _ in columns) + " |",
             "|" + "|".join("---" if d is None else "---:" for _, _, d in columns) + "|"]
    for _, row in table.iterrows():
        cells = [_cell(row[c], d) if d is not None else str(row[c] or "") for c, _, d in columns]
        if _is_summary(row["problem"]):
            cells = [f"**{c}**" if c not in ("", "-") else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_report(table: pd.DataFrame, title: str, context: dict[str, str],
                    plots: list[Path]) -> str:
    geo = table[table.problem == GEOMEAN].iloc[0]

    def ratio(column: str, what: str, noun: str) -> str:
        return f"no {noun} times" if math.isnan(geo[column]) else f"{geo[column]:.2f}x {what}"

    shapes = int((~table.problem.map(_is_summary)).sum())
    summary = (f"Geomean over {shapes} shapes: our kernel alone is "
               f"{ratio('tuned_vs_default', 'the hand-tuned default', 'default')} and "
               f"{ratio('tuned_vs_vendor', 'the vendor library', 'vendor')}; dispatch delivers "
               f"{ratio('dispatch_vs_default', 'the default', 'dispatch')} and "
               f"{ratio('dispatch_vs_vendor', 'the vendor', 'dispatch and vendor')} (ratios of "
               "times; > 1 means ours is faster).")
    parts = [f"# {title}", "", *(f"- {k}: {v}" for k, v in context.items()), "", summary, "",
             markdown_table(table), ""]
    parts += [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(parts) + "\n"


def write_report(measurements: list[Measurement], out_dir: str | Path, title: str,
                 context: dict[str, str],
                 subsets: dict[str, Callable[[str], bool]] | None = None,
                 plots: bool = True) -> pd.DataFrame:
    """report.md, table.csv, tflops.png and ratios.png under `out_dir`; returns the table.
    `plots=False` skips the PNGs (about 0.4 s a write), for a partial report rewritten often."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = comparison_table(measurements, subsets)
    table.to_csv(out_dir / "table.csv", index=False, float_format="%.6g")
    images = write_plots(table, out_dir, title) if plots else []
    (out_dir / "report.md").write_text(markdown_report(table, title, context, images))
    return table
