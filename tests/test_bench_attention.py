"""The Hopper attention benchmark's CPU side: its candidates are legal, one binary each, every
launch-time knob value covered; its table names the default, the best candidate and the
baselines of each shape."""

import json

from autotune.bench import attention as A
from kernels.fa4._sm90_config import compile_key, default_config, violations


def test_candidates_are_legal_distinct_binaries_with_every_launch_knob():
    for causal in (False, True):
        p = A.problem(causal)
        binaries = A.binaries(causal)
        assert len({compile_key(c) for c in binaries.values()}) == len(binaries) > 5
        assert default_config(p) in binaries.values()
        cands = A.candidates(causal)
        assert len(cands) == 4 * len(binaries)
        assert all(not violations(c, p) and compile_key(c) == compile_key(binaries[name])
                   for name, c in cands.values())


def test_table_reports_default_tuned_and_baselines(tmp_path):
    default = next(label for label, (name, c) in A.candidates(False).items()
                   if name == "full_default" and c == default_config(A.problem(False)))
    rows = [{"causal": False, "seqlen": 4096, "batch": 4, "name": n, "tflops": t, "ms": 1.0}
            for n, t in ((default, 600.0), ("full_bn128_s2_pp1_ov1_th8_grid_head", 700.0),
                         ("cudnn", 650.0), ("fa2", 350.0))]
    rows.append({"causal": False, "seqlen": 4096, "batch": 4, "name": "x", "failed": ["o_nan"]})
    head = {"kind": "header", "device": "H", "date": "d", "command": "c", "torch": "t",
            "triton": "t", "cuda": "c", "cudnn": 1, "python": "3", "heads": 16, "head_dim": 128,
            "tokens": 16384, "dtype": "bfloat16", "protocol": "p"}
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [head, *rows]))
    row = [line for line in A.report(path).splitlines() if line.startswith("| no | 4096")][0]
    assert row.split(" | ")[2:8] == ["600", "700", "650", "350", "1.08", "2.00"]
    assert "full_bn128_s2_pp1_ov1_th8_grid_head (2 timed, failed: x)" in row
    assert (tmp_path / "r.md").read_text().count("| no | 4096") == 1
