"""The Hopper attention benchmark (autotune/bench/attention.py says what it measures and how):

    python scripts/bench_fa4_sm90.py build .gpu/fa4_sm90_bench        # CPU: compile candidates
    python scripts/bench_fa4_sm90.py run .gpu/fa4_sm90_bench OUT      # GPU machine
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.bench.attention import main  # noqa: E402

if __name__ == "__main__":
    main()
