"""The timing protocol's sequencing and arithmetic, on the CPU: a fake graph timer plays a GPU
whose kernel and graph launch each cost a known time."""

from __future__ import annotations

import pytest

from autotune.runner.protocol import (passes_per_graph, per_launch, time_in_graph, timed_replays,
                                      warm_replays)

KERNEL_MS, GRAPH_MS = 0.011, 0.004


class FakeGpu:
    """Runs a graph body once to see what it enqueues, then 'replays' it at fixed costs with a
    little jitter per replay."""

    def __init__(self):
        self.bodies: list[list[int]] = []
        self.warm: list[int] = []  # untimed replays before each graph's timed ones

    def launch(self, i: int) -> None:
        self.bodies[-1].append(i)

    def graph_ms(self, body, replays: int, warm: int = 2) -> list:
        self.warm.append(warm)
        self.bodies.append([])
        body()
        cost = GRAPH_MS + KERNEL_MS * len(self.bodies[-1])
        return [cost * (1 + 0.001 * (r % 3 - 1)) for r in range(replays)]


def test_kernel_time_is_a_replay_over_the_launches_it_holds():
    gpu = FakeGpu()
    t = time_in_graph(gpu.launch, 4, graph_ms=gpu.graph_ms)
    # a replay holds at least 1 ms of work: ceil(1 / (4 x 11 us + 4 us)) = 21 passes of 4 sets;
    # the timed replays fill a second, by the one-pass estimate: ceil(1000 / (21 x 48 us)) = 993
    assert t.iters_per_round == 21 * 4 and t.rounds == 993 and t.input_sets == 4
    # the graph's own launch, spread over 84 kernels, is within 0.5% of the kernel's time
    assert t.ms == pytest.approx(KERNEL_MS, rel=0.005)
    assert t.min_ms <= t.ms <= t.max_ms
    # before the timed replays, ~200 ms of untimed ones, by the one-pass estimate:
    # ceil(200 / (21 passes x (4 x 11 us + 4 us))) = 199
    assert gpu.warm[-1] == 199


@pytest.mark.parametrize("replay_ms, warm", [(1.0, 200), (150.0, 2), (0.0, 2), (3.0, 67)])
def test_the_gpu_is_kept_busy_for_the_warm_up_before_timing(replay_ms, warm):
    assert warm_replays(replay_ms, 200.0) == warm


def test_every_input_set_is_launched_in_turn_and_equally_often():
    gpu = FakeGpu()
    time_in_graph(gpu.launch, 3, graph_ms=gpu.graph_ms)
    estimate, timed = gpu.bodies
    assert estimate == [0, 1, 2]  # one pass estimates the kernel's time
    assert timed == [0, 1, 2] * (len(timed) // 3) and len(timed) > 3


@pytest.mark.parametrize("replay_ms, timed", [(1.0, 1000), (0.3, 3334), (2000.0, 3), (0.0, 3)])
def test_the_timed_replays_span_the_window(replay_ms, timed):
    assert timed_replays(replay_ms, 1000.0) == timed


@pytest.mark.parametrize("pass_ms, passes", [(0.5, 2), (0.001, 64), (2.0, 1), (0.0, 64)])
def test_a_graph_replay_lasts_at_least_a_millisecond_within_the_cap(pass_ms, passes):
    assert passes_per_graph(pass_ms, 1.0) == passes


def test_per_launch_takes_the_mean_over_the_window():
    # a clock cycle's fast and slow phases count by their share of the window, not by which
    # phase has more replays (the median would read the fast 10 ms here)
    t = per_launch([10.0, 10.0, 10.0, 14.0, 14.0], 4, 2)
    assert (t.min_ms, t.ms, t.max_ms, t.rounds, t.input_sets) == (2.5, 2.9, 3.5, 5, 2)
