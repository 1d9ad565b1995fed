"""On a GPU: the two timers of the runner. The cold timer flushes L2 before every launch, so an
L2-resident copy is slower under it than back to back."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

from autotune.runner.timing import time_cold, time_launches  # noqa: E402


def test_cold_timer_pays_for_the_flushed_l2():
    src = torch.randn(4 << 20, device="cuda")  # 16 MiB in, 16 MiB out: both fit a Hopper L2
    dst = torch.empty_like(src)

    def launch(i):
        dst.copy_(src)

    cold = time_cold(launch, 1)
    warm = time_launches(launch, 1)
    assert cold.iters_per_round == 1 and cold.rounds >= 20 and cold.min_ms <= cold.median_ms
    assert cold.median_ms > 1.1 * warm.median_ms, (cold, warm)
