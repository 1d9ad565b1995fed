"""What the conformance kit checks for every attention space (fa4_sm90, fa4_sm100): the same
problem shapes and the same refusals, since all of them parse shapes through the attention op
(autotune/ops/attention.py). Not collected itself: a test module subclasses it and sets `space`."""

from autotune.testing import SpaceConformance


class AttentionSpaceKit(SpaceConformance):
    # one causal GQA shape (the kit compiles its default) and one MHA shape with ragged lengths
    shapes = ("1x4096/32:8/128/causal", "4x1000/16/64")
    bad_shapes = (
        ("4x4096/32:8/128/causl", "not of the form"),
        ("4x4096/128", "not of the form"),
        ("0x4096/32/128", "batch=0 must be >= 1"),
        ("1x0x16/32/128", "seqlen_q=0 must be >= 1"),
        ("1x16/32:7/128", "heads_q=32 must be a positive multiple of heads_kv=7"),
        ("1x200x100/8/128/causal", "without a key"),  # causal rows with no key to attend to
    )
