"""Tuned vs hand-tuned default vs vendor, per shape: a pandas table with TFLOP/s, ratios and
geomeans, matplotlib plots (PNG, Agg: no display needed) and a Markdown report. Fed by
measurements (measure.py on a GPU, or the times recorded in a config store)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd

VARIANTS = ("tuned", "default", "vendor")
GEOMEAN = "geomean"


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Median times (ms) of one shape; None where a variant could not run."""

    problem: str
    flops: float
    tuned_ms: float | None
    default_ms: float | None
    vendor_ms: float | None
    note: str = ""  # e.g. which config ran, or why a variant is missing
    others: dict[str, float] = dataclasses.field(default_factory=dict)  # more vendors' ms by name


def _geomean(values: pd.Series) -> float:
    values = values.dropna()
    values = values[values > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if len(values) else math.nan


def comparison_table(measurements: list[Measurement]) -> pd.DataFrame:
    """One row per shape plus a geomean row. Ratios > 1 mean the tuned kernel is faster."""
    rows = []
    for m in measurements:
        row = {"problem": m.problem}
        for v in VARIANTS:
            ms = getattr(m, f"{v}_ms")
            row[f"{v}_ms"] = ms
            row[f"{v}_tflops"] = m.flops / ms / 1e9 if ms and m.flops else None
        row["tuned_vs_default"] = m.default_ms / m.tuned_ms if m.tuned_ms and m.default_ms else None
        row["tuned_vs_vendor"] = m.vendor_ms / m.tuned_ms if m.tuned_ms and m.vendor_ms else None
        for name, ms in m.others.items():
            row.update({f"{name}_ms": ms, f"{name}_tflops": m.flops / ms / 1e9 if m.flops else None,
                        f"tuned_vs_{name}": ms / m.tuned_ms if m.tuned_ms else None})
        row["note"] = m.note
        rows.append(row)
    others = list(dict.fromkeys(name for m in measurements for name in m.others))
    table = pd.DataFrame(rows, columns=["problem"] + [f"{v}_{unit}" for v in VARIANTS
                                                      for unit in ("ms", "tflops")]
                         + ["tuned_vs_default", "tuned_vs_vendor"]
                         + [c for n in others for c in (f"{n}_ms", f"{n}_tflops", f"tuned_vs_{n}")]
                         + ["note"])
    numeric = [c for c in table.columns if c not in ("problem", "note")]
    table[numeric] = table[numeric].astype(float)
    # Geomeans of rates and ratios only: a geomean of times over different shapes means nothing.
    geomean = {c: _geomean(table[c]) for c in numeric if not c.endswith("_ms")}
    geomean.update(problem=GEOMEAN, note="")
    return pd.concat([table, pd.DataFrame([geomean])], ignore_index=True)


def _short(problem: str) -> str:
    """"M=16,N=4096,K=4096,dtype=bfloat16" -> "16x4096x4096"; plot labels must be short."""
    sizes = [item.split("=", 1)[1] for item in problem.split(",") if not item.startswith("dtype=")]
    return "x".join(sizes) if sizes else problem


def write_plots(table: pd.DataFrame, out_dir: Path, title: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = table[table.problem != GEOMEAN]
    labels = [_short(p) for p in shapes.problem]
    width = 0.27

    def grouped_bars(name: str, columns: dict[str, str], ylabel: str, subtitle: str,
                     unit_line: bool = False) -> Path:
        """One bar per column and shape, side by side; saved as out_dir/name."""
        fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(labels) + 2), 4.5))
        offset = (len(columns) - 1) / 2
        for i, (col, label) in enumerate(columns.items()):
            ax.bar([j + (i - offset) * width for j in range(len(labels))],
                   shapes[col].fillna(0), width, label=label)
        if unit_line:
            ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(range(len(labels))), labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.legend()
        fit_title(fig, ax, f"{title}: {subtitle}")
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=120)
        plt.close(fig)
        return out_dir / name

    return [grouped_bars("tflops.png", {f"{v}_tflops": v for v in VARIANTS}, "TFLOP/s",
                         "throughput per shape"),
            grouped_bars("ratios.png", {c: c.replace("_", " ")
                                        for c in ("tuned_vs_default", "tuned_vs_vendor")},
                         "speed-up of the tuned kernel (x)", "tuned vs default and vendor",
                         unit_line=True)]


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
    columns = [("problem", "shape", None), ("tuned_tflops", "tuned TFLOP/s", 1),
               ("default_tflops", "default TFLOP/s", 1), ("vendor_tflops", "vendor TFLOP/s", 1),
               ("tuned_ms", "tuned ms", 4), ("default_ms", "default ms", 4),
               ("vendor_ms", "vendor ms", 4), ("tuned_vs_default", "tuned/default", 2),
               ("tuned_vs_vendor", "tuned/vendor", 2)]
    others = [c.removesuffix("_tflops") for c in table.columns
              if c.endswith("_tflops") and c.removesuffix("_tflops") not in VARIANTS]
    columns += [c for n in others for c in ((f"{n}_tflops", f"{n} TFLOP/s", 1),
                                            (f"tuned_vs_{n}", f"tuned/{n}", 2))]
    columns.append(("note", "note", None))
    lines = ["| " + " | ".join(title for _, title, _ in columns) + " |",
             "|" + "|".join("---" if d is None else "---:" for _, _, d in columns) + "|"]
    for _, row in table.iterrows():
        cells = [_cell(row[c], d) if d is not None else str(row[c] or "") for c, _, d in columns]
        if row["problem"] == GEOMEAN:
            cells = [f"**{c}**" if c not in ("", "-") else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_report(table: pd.DataFrame, title: str, context: dict[str, str],
                    plots: list[Path]) -> str:
    geo = table[table.problem == GEOMEAN].iloc[0]
    ratios = [f"{_cell(geo[c], 2)}x {what}" if not math.isnan(geo[c]) else f"no {none} times"
              for c, what, none in (("tuned_vs_default", "the hand-tuned default", "default"),
                                    ("tuned_vs_vendor", "the vendor library", "vendor"))]
    summary = (f"Geomean over {len(table) - 1} shapes: tuned is {ratios[0]} and {ratios[1]} "
               "(ratios of times; > 1 means the tuned kernel is faster).")
    parts = [f"# {title}", "", *(f"- {k}: {v}" for k, v in context.items()), "", summary, "",
             markdown_table(table), ""]
    parts += [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(parts) + "\n"


def write_report(measurements: list[Measurement], out_dir: str | Path, title: str,
                 context: dict[str, str]) -> pd.DataFrame:
    """report.md, table.csv, tflops.png and ratios.png under `out_dir`; returns the table."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = comparison_table(measurements)
    table.to_csv(out_dir / "table.csv", index=False, float_format="%.6g")
    plots = write_plots(table, out_dir, title)
    (out_dir / "report.md").write_text(markdown_report(table, title, context, plots))
    return table
