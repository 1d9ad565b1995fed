"""A third kernel (tests/toy_rowscale.py), registered through its own entry point, goes the whole
way with no edit to the package: tuned compile-only and simulated, stored, dispatched through
the torch custom op (a stub launcher runs its artifacts on the CPU) and reported by
`autotune compare --from-store`."""

import sys
from pathlib import Path

import pytest

from autotune import cli
from autotune.compare.__main__ import main as compare_cli
from autotune.dispatch import load, resolve_space
from autotune.spaces import discover
from autotune.store import Gpu
from autotune.store.__main__ import main as store_cli
from autotune.testing import SpaceConformance

pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from toy_rowscale import ROWSCALE, RowScaleSm90Space  # noqa: E402  (tests/ is on sys.path)

TOY_GPU = Gpu("sm_90a", "Toy GPU")


@pytest.fixture(scope="module", autouse=True)
def entry_point(tmp_path_factory):
    """The toy's distribution metadata, as `pip install` of its package would write it."""
    site = tmp_path_factory.mktemp("site")
    info = site / "toy_rowscale-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-rowscale\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[autotune.spaces]\ntoy_rowscale = toy_rowscale:RowScaleSm90Space\n")
    sys.path.insert(0, str(site))
    yield
    sys.path.remove(str(site))


class TestToyConformance(SpaceConformance):
    space = RowScaleSm90Space()


def test_the_registered_plugin_serves_its_kernel():
    assert discover()["toy_rowscale"].space_class is RowScaleSm90Space
    assert type(resolve_space("rowscale", "sm_90a")) is RowScaleSm90Space
    assert RowScaleSm90Space.kernel == "rowscale"


class CpuStub:
    """Runs a rowscale artifact on the CPU: what its CUDA source computes (ReLU where the source
    has the max), so a route that loaded another problem's binary gives a wrong answer."""

    def __init__(self, path):
        import tirx

        self.artifact = tirx.Artifact.load(path)

    def __call__(self, x, s, y, check=True):
        out = x * s[:, None]
        y.copy_(out.clamp_min(0) if "max(" in self.artifact.source else out)


def _simulated_table(path: Path, problems) -> None:
    import pandas as pd

    space = RowScaleSm90Space()
    rows = [{**c, "problem": p.key, "time_ms": 0.01 * (1 + (c["threads"] - 128) ** 2 / 1e4)
             / c["rows_per_cta"] ** 0.5}
            for p in problems for c in space.legal_configs(p)]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_tuned_compile_only(tmp_path, capsys):
    argv = ["tune", "toy_rowscale", "--compile-only", "--shapes", "256x1024+relu", "--trials",
            "3", "--compile-workers", "1", "--storage", f"sqlite:///{tmp_path}/c.db",
            "--no-progress", "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "rows=256,cols=1024,relu=true,dtype=float32: 3 trials" in out and "compiled 3" in out


def test_simulated_study_stored_dispatched_and_compared(tmp_path, capsys):
    space = RowScaleSm90Space()
    shapes = ["256x1024", "256x1024+relu"]
    problems = [space.parse_problem(s) for s in shapes]
    _simulated_table(tmp_path / "table.csv", problems)
    url = f"sqlite:///{tmp_path}/toy.db"
    assert cli.main(["tune", "toy_rowscale", "--simulate", str(tmp_path / "table.csv"),
                     "--shapes", *shapes, "--trials", "12", "--seed", "0", "--storage", url,
                     "--no-progress"]) == 0
    store = tmp_path / "store.json"
    assert store_cli(["export", "--space", "toy_rowscale", "--storage", url, "--device",
                      TOY_GPU.device, "--out", str(store)]) == 0
    capsys.readouterr()

    op = load("rowscale", store=store, artifacts=tmp_path / "artifacts", gpu=TOY_GPU,
              build=True, load_kernel=CpuStub)
    from autotune.dispatch.torch_op import register_torch_op

    rowscale = register_torch_op(op)
    gen = torch.Generator().manual_seed(0)
    for rows, relu, reason in ((256, False, "exact"), (256, True, "exact"), (200, True, "bucket")):
        x, s = torch.randn(rows, 1024, generator=gen), torch.randn(rows, generator=gen)
        y = torch.ops.autotune.rowscale(x, s, relu)
        want = x * s[:, None]
        assert torch.equal(y, want.clamp_min(0) if relu else want)
        route = op.route(x, s, relu)
        assert route.reason == reason and route.problem["relu"] is relu
        assert route.tuned == ROWSCALE.problem("float32", rows=256, cols=1024, relu=relu).key
    traced = torch.compile(lambda x, s: rowscale(x, s, True) + 1, backend="aot_eager",
                           fullgraph=True)
    x, s = torch.randn(256, 1024, generator=gen), torch.randn(256, generator=gen)
    assert torch.equal(traced(x, s), (x * s[:, None]).clamp_min(0) + 1)

    assert compare_cli(["rowscale", "--from-store", str(store), "--out",
                        str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    for problem in problems:
        assert problem.key in report
    assert "Toy GPU" in report
