"""The timing protocol's sequencing and arithmetic, on the CPU: a fake graph timer plays a GPU
whose kernel and graph launch each cost a known time."""

from __future__ import annotations

import pytest

from autotune.runner.protocol import passes_per_graph, per_launch, time_in_graph, warm_replays

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
    t = time_in_graph(gpu.launch, 4, replays=9, graph_ms=gpu.graph_ms)
    # a replay holds at least 1 ms of work: ceil(1 / (4 x 11 us + 4 us)) = 21 passes of 4 sets
    assert t.iters_per_round == 21 * 4 and t.rounds == 9 and t.input_sets == 4
    # the graph's own launch, spread over 84 kernels, is within 0.5% of the kernel's time
    assert t.median_ms == pytest.approx(KERNEL_MS, rel=0.005)
    assert t.min_ms <= t.median_ms <= t.max_ms
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


@pytest.mark.parametrize("pass_ms, passes", [(0.5, 2), (0.001, 64), (2.0, 1), (0.0, 64)])
def test_a_graph_replay_lasts_at_least_a_millisecond_within_the_cap(pass_ms, passes):
    assert passes_per_graph(pass_ms, 1.0) == passes


def test_per_launch_takes_the_median_replay():
    t = per_launch([10.0, 12.0, 11.0], 4, 2)
    assert (t.min_ms, t.median_ms, t.max_ms, t.input_sets) == (2.5, 2.75, 3.0, 2)
