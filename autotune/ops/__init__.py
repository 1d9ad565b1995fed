"""Operations (GEMM, attention, ...): what every search space of one operation shares, and how
dispatch meets torch for it. A plugin names its op as `SearchSpace.op`."""

from .base import Launcher, Op, dtype_name
from .bucket import BucketRule, next_pow2
from .problem import Problem

__all__ = ["BucketRule", "Launcher", "Op", "Problem", "dtype_name", "next_pow2"]
