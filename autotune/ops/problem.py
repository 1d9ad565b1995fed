"""A tuning target: an operation's named fields (integer sizes and boolean flags) and its dtype,
with a stable key that names it in storage, config stores and reports."""

from __future__ import annotations

import dataclasses
Value = int | bool  # a problem field: an integer size, or a flag


def _text(value: Value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _value(text: str) -> Value:
    return text == "true" if text in ("true", "false") else int(text)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One tuning target: an operation's named fields (integer sizes and boolean flags, in the
    op's order) and its dtype, e.g. GEMM M=4096 N=4096 K=4096 bf16, or attention with causal."""

    fields: tuple[tuple[str, Value], ...]  # ordered (name, value) pairs
    dtype: str = "bfloat16"

    def __post_init__(self):
        for name, value in self.fields:
            if not isinstance(value, int):
                raise ValueError(f"problem field {name}={value!r} is neither an integer nor a flag")

    @classmethod
    def of(cls, dtype: str = "bfloat16", **fields: Value) -> "Problem":
        return cls(tuple(fields.items()), dtype)

    @classmethod
    def from_key(cls, key: str) -> "Problem":
        """Inverse of `key`: "M=16,N=4096,K=4096,dtype=bfloat16" -> Problem."""
        fields, dtype = [], None
        for item in key.split(","):
            name, sep, text = item.partition("=")
            if not sep or not name:
                raise ValueError(f"problem key {key!r}: {item!r} is not NAME=VALUE")
            if name == "dtype":
                dtype = text
                continue
            try:
                fields.append((name, _value(text)))
            except ValueError:
                raise ValueError(f"problem key {key!r}: {name}={text!r} is neither an integer nor "
                                 "true/false") from None
        if dtype is None:
            raise ValueError(f"problem key {key!r} has no dtype")
        return cls(tuple(fields), dtype)

    def __getitem__(self, name: str) -> Value:
        return self.values[name]

    @property
    def values(self) -> dict[str, Value]:
        return dict(self.fields)

    @property
    def sizes(self) -> dict[str, int]:
        """The integer fields."""
        return {k: v for k, v in self.fields if not isinstance(v, bool)}

    @property
    def flags(self) -> dict[str, bool]:
        return {k: v for k, v in self.fields if isinstance(v, bool)}

    @property
    def key(self) -> str:
        """Stable, human-readable identity used in storage and config files."""
        return ",".join(f"{k}={_text(v)}" for k, v in self.fields) + f",dtype={self.dtype}"


def dtype_tolerance(dtype: str) -> float:
    """A relative error that the dtype's rounding explains, for outputs of a few thousand terms."""
    return {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4}.get(dtype, 2e-2)
