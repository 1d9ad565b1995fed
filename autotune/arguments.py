"""Command-line arguments that several commands parse the same way: shapes, --fix values and GPU
indices."""

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
            problems.append(space.parse_problem(text, dtype) if dtype
                            else space.parse_problem(text))
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


def _parse_value(text: str, dist):
    """Match `text` against a distribution's values ("128" -> 128 for an int knob)."""
    import optuna

    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        for choice in dist.choices:
            if str(choice) == text:
                return choice
        raise UserError(f"value {text!r} is not one of {list(dist.choices)}")
    try:
        value = int(text) if isinstance(dist, optuna.distributions.IntDistribution) else float(text)
    except ValueError:
        raise UserError(f"value {text!r} is not a number") from None
    if not dist._contains(dist.to_internal_repr(value)):
        raise UserError(f"value {value} is outside [{dist.low}, {dist.high}]")
    return value


def fixed_params(space, problems, items: list[str]) -> dict:
    """The values of --fix NAME=VALUE, each checked against the space's parameters."""
    from .study.fixed import check_fixed

    fixed = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise UserError(f"--fix {item!r}: expected NAME=VALUE")
        for problem in problems:
            params = space.parameters(problem)
            if name not in params:
                raise UserError(f"--fix {item}: {space.name} has no parameter {name!r} "
                                f"(parameters: {', '.join(params)})")
            try:
                fixed[name] = _parse_value(text, params[name])
            except UserError as exc:
                raise UserError(f"--fix {item}: {exc}") from None
    check_fixed(space, problems, fixed)
    return fixed
