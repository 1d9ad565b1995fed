"""The sm90 GEMM plugin against the project's plugin conformance kit."""

from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.testing import SpaceConformance


class TestGemmSm90Conformance(SpaceConformance):
    space = GemmSm90Space()
    # one shape per default-config class: decode, skinny, medium, large
    shapes = ("16x4096x4096", "128x6144x4096", "512x4096x4096", "4096x4096x4096")
    bad_shapes = (("4096x4097x4096", "N=4097 is not a multiple of 8"),
                  ("4096x4096x100", "K=100 is not a multiple of 8"),
                  ("0x4096x4096", "must be positive"),
                  ("4096x4096", "not of the form MxNxK"))
