"""`autotune compare`: tuned vs default vs vendor per shape (table, plots, Markdown report)."""

from .cli import add_compare_command, compare_main
from .report import Measurement, comparison_table, markdown_report, write_report

__all__ = ["Measurement", "add_compare_command", "compare_main", "comparison_table",
           "markdown_report", "write_report"]
