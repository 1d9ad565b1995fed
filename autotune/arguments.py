"""Command-line arguments that several commands parse the same way: shapes and GPU indices."""

from __future__ import annotations

from .errors import UserError


def parse_shapes(space, shapes: list[str] | None, dtype: str | None):
    """The problems of --shapes (default: the space's), each parsed by the space."""
    texts = shapes or list(space.default_shapes)
    if not texts:
        raise UserError(f"{space.name} has no default shapes: pass --shapes")
    problems = []
    for text in texts:
        try:
            problems.append(space.parse_problem(text, dtype) if dtype else space.parse_problem(text))
        except ValueError as exc:
            raise UserError(f"--shapes {text!r} ({space.name}): {exc}") from None
    return problems


def device_list(text: str) -> list[int] | None:
    if text == "all":
        return None
    try:
        devices = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--gpus {text!r}: expected 'all' or indices such as 0,1") from None
    if not devices or len(set(devices)) != len(devices) or min(devices) < 0:
        raise UserError(f"--gpus {text!r}: expected 'all' or distinct indices such as 0,1")
    return devices
