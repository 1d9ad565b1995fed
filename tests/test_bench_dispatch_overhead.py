"""The dispatch-overhead benchmark's protocol (autotune/bench/dispatch_overhead.py), on the CPU:
every repeat times every variant in a rotated order, and the overhead pairs samples of the
same repeat, so a slow spell of the host does not read as dispatch cost."""

from __future__ import annotations

import sys
import types

from autotune.bench import dispatch_overhead as bench


def test_overhead_pairs_samples_of_the_same_repeat():
    # the host was slow for three of five repeats; in one of them, only while timing bare
    bare = [10.0, 10.0, 10.0, 50.0, 50.0]
    dispatch = [12.0, 12.0, 52.0, 52.0, 52.0]
    samples = {"bare_kernel": bare, "dispatch_out": dispatch}
    assert bench.paired_overhead_us(samples, "dispatch_out", "bare_kernel") == 2.0
    # the difference of medians would have called it 42 us
    assert sorted(dispatch)[2] - sorted(bare)[2] == 42.0


def test_every_repeat_times_every_variant_in_a_rotated_order(monkeypatch):
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    order = []
    variants = {n: (lambda n=n: order.append(n)) for n in ("a", "b", "c")}
    samples = bench.per_call_samples(variants, calls=1, repeats=3)
    assert {n: len(xs) for n, xs in samples.items()} == {"a": 3, "b": 3, "c": 3}
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
