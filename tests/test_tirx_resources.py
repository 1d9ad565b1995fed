"""Resource checks run before compiling and name the limit that a config exceeds."""

import pytest

import tirx


def test_within_limits_passes():
    tirx.check_resources("sm_90a", smem_bytes=232448, threads=384, cluster_size=2)
    tirx.check_resources("sm_100a", smem_bytes=200000, threads=256, tmem_columns=512)


@pytest.mark.parametrize("arch, usage, message", [
    ("sm_90a", {"smem_bytes": 232449}, "shared memory 232449 B > 232448 B per block"),
    ("sm_90a", {"threads": 1056}, "threads 1056 > 1024 per block"),
    ("sm_100a", {"tmem_columns": 768}, "TMEM columns 768 > 512"),
    ("sm_90a", {"tmem_columns": 128}, "sm_90a has no tensor memory"),
    ("sm_90a", {"cluster_size": 32}, "cluster size 32 > 16"),
    ("sm_90a", {"registers_per_thread": 168, "threads": 512}, "168 x 512 threads = 86016 > 65536"),
])
def test_each_limit_is_named(arch, usage, message):
    with pytest.raises(tirx.ResourceLimitError) as e:
        tirx.check_resources(arch, **usage)
    assert message in str(e.value)
    assert e.value.kind == "resources"


def test_every_violation_is_reported_at_once():
    with pytest.raises(tirx.ResourceLimitError) as e:
        tirx.check_resources("sm_100a", smem_bytes=300000, threads=2048, tmem_columns=1024)
    assert len(e.value.violations) == 3


def test_unknown_arch_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown arch 'sm_89'.*sm_90a, sm_100a"):
        tirx.check_resources("sm_89", threads=1)
