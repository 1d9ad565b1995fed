"""Dispatch: the bucket and fallback rules (table-driven), the evidence a config tuned
elsewhere needs, the vendor op when it was timed faster, route choice, kernel caching in memory
and on disk, the vendor fallback, and `load` with its store checks. No torch, no GPU: tensors
are look-alikes with .shape/.dtype, kernels are recorders."""

import json
import warnings
from pathlib import Path

import pytest

import tirx
from autotune.dispatch import ArtifactIndex, Dispatcher, KernelProvider, NoKernelWarning, Selector, load
from autotune.ops import BucketRule, next_pow2
from autotune.ops.gemm import GEMM
from autotune.dispatch.prebuild import prebuild
from autotune.spaces.base import Problem, SearchSpace
from autotune.store import ConfigStore, Entry, Gpu, StoreMismatchWarning, config_id, expected_header

H200 = Gpu("sm_90a", "NVIDIA H200", "13.0", "13.0")


# -- look-alikes -------------------------------------------------------------------------------
class FakeTensor:
    def __init__(self, *shape, dtype="torch.bfloat16", contiguous=True):
        self.shape, self.dtype, self._contiguous = tuple(shape), dtype, contiguous

    def is_contiguous(self):
        return self._contiguous

    def contiguous(self):
        return FakeTensor(*self.shape, dtype=self.dtype)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return FakeTensor(*shape, dtype=self.dtype, contiguous=self._contiguous)

    view = reshape

    def new_empty(self, shape):
        return FakeTensor(*shape, dtype=self.dtype)


class FakeGemmSpace(SearchSpace):
    """Legal: blk <= N. Default config marks itself."""

    name, arch, op = "fake_gemm", "sm_90a", GEMM

    def parameters(self, problem):
        return {}

    def violations(self, config, problem):
        return [f"blk {config['blk']} > N"] if config["blk"] > problem["N"] else []

    def default_config(self, problem):
        return dict(FAKE_DEFAULT)

    def parse_problem(self, text, dtype="bfloat16"):
        M, N, K = map(int, text.split("x"))
        return Problem.of(dtype, M=M, N=N, K=K)

    build = make_inputs = output_indices = reference = None

    def template_files(self):
        return []


def gemm(m, n=4096, k=4096, dtype="bfloat16"):
    return Problem.of(dtype, M=m, N=n, K=k)


FAKE_DEFAULT = {"blk": 8, "default": True}


def entries(*problems, blk=128, ms=0.8, vendor_ms=None):
    """Each problem's own config, and the records of a study that timed every one of them on
    every stored shape, each `ms` against the default's 1.0: evidence that they generalise."""
    configs = {p.key: {"blk": blk, "tuned_for": p.key} for p in problems}
    measured = {config_id(c): ms for c in configs.values()} | {config_id(FAKE_DEFAULT): 1.0}
    return {p.key: Entry(p.key, configs[p.key], ms, default_ms=1.0, vendor_ms=vendor_ms,
                         measured=dict(measured)) for p in problems}


class Recorder:
    """A kernel: records its launches."""

    def __init__(self, path):
        self.path, self.calls = path, []

    def __call__(self, *buffers, check=True):
        self.calls.append(buffers)


def dummy_artifact(key):
    launch = tirx.LaunchSpec(symbol="k", args=(), params=(), tensor_maps=(), grid=(1, 1, 1),
                             block=(128, 1, 1), cluster=None, dynamic_smem=0)
    resources = tirx.Resources(32, 0, 0, 0, 0, 0, 128)
    return tirx.Artifact(key=key, arch="sm_90a", launch=launch, resources=resources,
                         versions={}, cubin=b"\0", source="// k")


def make_dispatcher(tmp_path, stored=(), buildable=True, space=None):
    space = space or FakeGemmSpace()
    index = ArtifactIndex(tmp_path / "artifacts")
    built = []

    def build(space, problem, config, index):
        if not buildable:
            return None
        built.append((problem.key, config))  # as build_with_tirx: indexed by its binary problem
        return index.add(space, space.binary_problem(problem), config,
                         dummy_artifact(f"a{len(built)}"))

    loaded = []

    def load_kernel(path):
        loaded.append(path)
        return Recorder(path)

    provider = KernelProvider(space, index, load_kernel, build)
    op = Dispatcher(space, Selector(entries(*stored), GEMM.bucket, space.default_config),
                    provider)
    return op, built, loaded


# -- rules -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, want", [(0, 1), (1, 1), (2, 2), (3, 4), (64, 64), (65, 128),
                                     (8191, 8192)])
def test_next_pow2(n, want):
    assert next_pow2(n) == want


@pytest.mark.parametrize("a, b, same", [
    (gemm(1), gemm(1), True),
    (gemm(3), gemm(4), True),
    (gemm(5), gemm(8), True),
    (gemm(4), gemm(5), False),
    (gemm(600), gemm(1024), True),
    (gemm(1024), gemm(1025), False),
    (gemm(16, n=4096), gemm(16, n=6144), False),  # N is fixed within a bucket
    (gemm(16, k=4096), gemm(16, k=14336), False),  # K too
    (gemm(16), gemm(16, dtype="float16"), False),  # and the dtype
])
def test_gemm_bucket(a, b, same):
    assert (GEMM.bucket.bucket(a) == GEMM.bucket.bucket(b)) is same


# An attention op's rule, as the attention plugins declare theirs: the sequence length bucketed,
# head_dim, causal and the GQA ratio (derived from the head counts) fixed.
ATTENTION_RULE = BucketRule(
    same=("head_dim", "causal", "gqa"), pow2=("seqlen_q",),
    derive=lambda f: {"gqa": f["heads_q"] // f["heads_kv"]})


def attn(s, h=32, h_kv=8, d=128, causal=True, b=1):
    return Problem.of("bfloat16", batch=b, seqlen_q=s, seqlen_k=s, heads_q=h, heads_kv=h_kv,
                      head_dim=d, causal=causal)


@pytest.mark.parametrize("a, b, same", [
    (attn(1000), attn(1024), True),
    (attn(1024), attn(1025), False),
    (attn(1000, b=1), attn(1000, b=8), True),  # batch is not part of the bucket
    (attn(1000, h=32, h_kv=8), attn(1000, h=16, h_kv=4), True),  # same GQA ratio
    (attn(1000, h=32, h_kv=8), attn(1000, h=32, h_kv=32), False),
    (attn(1000, d=128), attn(1000, d=64), False),
    (attn(1000, causal=True), attn(1000, causal=False), False),
])
def test_attention_bucket(a, b, same):
    assert (ATTENTION_RULE.bucket(a) == ATTENTION_RULE.bucket(b)) is same


TUNED = (gemm(16), gemm(64), gemm(128), gemm(4096), gemm(16, n=14336, k=4096),
         gemm(512, n=6144), gemm(32, dtype="float16"))


@pytest.mark.parametrize("query, reason, tuned", [
    (gemm(16), "exact", gemm(16)),
    (gemm(9), "bucket", gemm(16)),  # 9 -> bucket 16
    (gemm(33), "bucket", gemm(64)),
    (gemm(100), "bucket", gemm(128)),
    (gemm(3000), "bucket", gemm(4096)),
    # outside the bucket no tuned config serves untimed (only first use tries them)
    (gemm(8), "default", None),  # bucket 8 is empty
    (gemm(300), "default", None),  # bucket 512 (same N, K) is empty
    (gemm(500, n=6144), "bucket", gemm(512, n=6144)),
    (gemm(500, n=6000), "default", None),  # N differs: no bucket
    # same dtype only; and one other shape is no evidence that a config generalises
    (gemm(16, dtype="float16"), "default", None),
    (gemm(32, dtype="float16"), "exact", gemm(32, dtype="float16")),
    (gemm(16, dtype="float32"), "default", None),  # nothing tuned for the dtype
])
def test_selection_first_choice(query, reason, tuned):
    space = FakeGemmSpace()
    first = Selector(entries(*TUNED), GEMM.bucket, space.default_config).choices(query)[0]
    assert (first.reason, first.tuned) == (reason, tuned.key if tuned else None)
    if reason == "default":
        assert first.config == space.default_config(query)


@pytest.mark.parametrize("query, nearest, tuned", [
    (gemm(8), gemm(16), TUNED), (gemm(300), gemm(128), TUNED),
    (gemm(500, n=6000), gemm(512, n=6144), TUNED)])
def test_first_use_is_offered_the_nearest_config_that_dispatch_does_not_serve(query, nearest,
                                                                              tuned):
    space = FakeGemmSpace()
    choices = Selector(entries(*tuned), GEMM.bucket, space.default_config).choices(query, True)
    assert (choices[0].reason, choices[0].tuned) == ("nearest", nearest.key)


def test_selection_order_is_exact_bucket_nearest_default():
    selector = Selector(entries(gemm(16), gemm(9), gemm(12), gemm(64)), GEMM.bucket,
                        FakeGemmSpace().default_config)
    served = [("exact", gemm(12).key), ("bucket", gemm(9).key), ("bucket", gemm(16).key)]
    assert [(c.reason, c.tuned) for c in selector.choices(gemm(12))] == [
        *served, ("default", None)]
    assert [(c.reason, c.tuned) for c in selector.choices(gemm(12), nearest=True)] == [
        *served, ("nearest", gemm(64).key), ("default", None)]


def test_no_store_means_default():
    choices = Selector({}, GEMM.bucket, FakeGemmSpace().default_config).choices(gemm(7))
    assert [c.reason for c in choices] == ["default"]


# -- dispatcher --------------------------------------------------------------------------------
@pytest.mark.parametrize("m, reason, tuned", [
    (16, "exact", gemm(16)), (12, "bucket", gemm(16)), (8, "default", None),
    (2000, "default", None),
])
def test_dispatch_picks_what_the_rules_say(tmp_path, m, reason, tuned):
    op, built, _ = make_dispatcher(tmp_path, stored=(gemm(16), gemm(100), gemm(100, n=1024)))
    route = op.route(FakeTensor(m, 4096), FakeTensor(4096, 4096))
    assert (route.reason, route.tuned) == (reason, tuned.key if tuned else None)
    assert built == [(gemm(m).key, route.config)]


def test_illegal_choices_are_skipped_down_to_the_default(tmp_path):
    # Tuned configs use blk=128 > N=64: illegal for this N, so the default serves.
    op, built, _ = make_dispatcher(tmp_path, stored=(gemm(16), gemm(32)))
    route = op.route(FakeTensor(16, 4096), FakeTensor(64, 4096))
    assert route.reason == "default" and route.config["default"]
    assert built == [(gemm(16, n=64).key, route.config)]


def test_dispatch_launches_with_output_and_caches_the_route(tmp_path):
    op, built, loaded = make_dispatcher(tmp_path, stored=(gemm(16),))
    a, b = FakeTensor(16, 4096), FakeTensor(4096, 4096)
    d = op(a, b)
    assert d.shape == (16, 4096)
    op(a, b)
    op(FakeTensor(16, 4096), FakeTensor(4096, 4096))  # equal shapes: same route
    assert len(built) == 1 and len(loaded) == 1 and len(op.routes) == 1
    kernel = op.provider.kernels[next(iter(op.provider.kernels))]
    assert len(kernel.calls) == 3
    assert [t.shape for t in kernel.calls[0]] == [(16, 4096), (4096, 4096), (16, 4096)]


def test_leading_dims_are_flattened_and_restored(tmp_path):
    op, _, _ = make_dispatcher(tmp_path, stored=(gemm(16),))
    d = op(FakeTensor(2, 8, 4096), FakeTensor(1024, 4096))
    assert d.shape == (2, 8, 1024)
    assert op.route(FakeTensor(2, 8, 4096), FakeTensor(1024, 4096)).problem == gemm(16, n=1024)


def test_non_contiguous_inputs_are_made_contiguous(tmp_path):
    op, _, _ = make_dispatcher(tmp_path)
    op(FakeTensor(4, 4096, contiguous=False), FakeTensor(4096, 4096, contiguous=False))
    (kernel,) = op.provider.kernels.values()
    assert all(t.is_contiguous() for t in kernel.calls[0])


def test_out_is_written(tmp_path):
    op, _, _ = make_dispatcher(tmp_path)
    out = FakeTensor(4, 4096)
    assert op(FakeTensor(4, 4096), FakeTensor(4096, 4096), out=out) is out


def test_kernels_persist_on_disk_across_dispatchers(tmp_path):
    op, built, _ = make_dispatcher(tmp_path, stored=(gemm(16),))
    op(FakeTensor(16, 4096), FakeTensor(4096, 4096))
    # A new process on a GPU machine: nothing can be built, the index has the kernel.
    op2, built2, loaded2 = make_dispatcher(tmp_path, stored=(gemm(16),), buildable=False)
    assert op2.route(FakeTensor(16, 4096), FakeTensor(4096, 4096)).reason == "exact"
    assert built2 == [] and loaded2[0].parent == tmp_path / "artifacts"


def test_without_a_store_every_shape_gets_the_default(tmp_path):
    op, _, _ = make_dispatcher(tmp_path)
    assert {op.route(FakeTensor(m, 4096), FakeTensor(4096, 4096)).reason
            for m in (1, 7, 64, 5000)} == {"default"}


def test_same_kernel_is_loaded_once_per_shape_and_config(tmp_path):
    op, _, loaded = make_dispatcher(tmp_path, stored=(gemm(16),))
    op(FakeTensor(16, 4096), FakeTensor(4096, 4096))
    op(FakeTensor(2, 8, 4096), FakeTensor(4096, 4096))  # same problem, other call shape
    assert len(op.routes) == 2 and len(loaded) == 1


def test_without_any_kernel_the_vendor_op_serves(tmp_path):
    op, _, _ = make_dispatcher(tmp_path, stored=(gemm(16),), buildable=False)

    class Vendorable(FakeTensor):
        T = property(lambda self: self)

        def __matmul__(self, other):
            return FakeTensor(self.shape[0], other.shape[0], dtype=self.dtype)

    with pytest.warns(NoKernelWarning, match="vendor"):
        d = op(Vendorable(16, 4096), Vendorable(4096, 4096))
    assert d.shape == (16, 4096)
    assert op.route(Vendorable(16, 4096), Vendorable(4096, 4096)).reason == "vendor"


def test_a_failing_build_falls_through_to_the_next_choice(tmp_path):
    space = FakeGemmSpace()
    index = ArtifactIndex(tmp_path)

    def build(space, problem, config, index):
        if not config.get("default"):
            raise RuntimeError("nvrtc: boom")
        return index.add(space, problem, config, dummy_artifact("d"))

    op = Dispatcher(space, Selector(entries(gemm(16)), GEMM.bucket, space.default_config),
                    KernelProvider(space, index, Recorder, build))
    with pytest.warns(NoKernelWarning, match="boom"):
        assert op.route(FakeTensor(16, 4096), FakeTensor(4096, 4096)).reason == "default"


@pytest.mark.parametrize("a, b", [
    (FakeTensor(16, 4096), FakeTensor(4096, 2048)),  # K mismatch
    (FakeTensor(16, 4096), FakeTensor(4096, 4096, dtype="torch.float16")),
    (FakeTensor(16, 4096), FakeTensor(2, 4096, 4096)),
])
def test_a_call_no_gemm_can_serve_is_an_error(tmp_path, a, b):
    op, _, _ = make_dispatcher(tmp_path)
    with pytest.raises(ValueError, match="gemm"):
        op(a, b)


# -- load --------------------------------------------------------------------------------------
def real_space_store(space, device="NVIDIA H200", **header_changes):
    header = expected_header(space, Gpu("sm_90a", device))
    store = ConfigStore(header.__class__(**{**header.__dict__, **header_changes}))
    store.add(Entry(gemm(16).key, dict(space.default_config(gemm(16)), stages=6), 0.01))
    return store


def test_load_uses_a_matching_store(tmp_path):
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    path = real_space_store(GemmSm90Space()).write(tmp_path / "s.json")
    op = load("gemm", store=path, artifacts=tmp_path / "a", gpu=H200, build=False,
              load_kernel=Recorder)
    assert op.space.name == "gemm_sm90" and op.store_path == str(path)
    assert list(op.selector.entries) == [gemm(16).key]


@pytest.mark.parametrize("changes, why", [({"device": "NVIDIA H100"}, "device"),
                                          ({"template": "old"}, "template")])
def test_load_refuses_a_mismatching_store_and_uses_defaults(tmp_path, changes, why):
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    store = real_space_store(GemmSm90Space(), **changes)
    with pytest.warns(StoreMismatchWarning, match=why):
        op = load("gemm", store=store.write(tmp_path / "s.json"), artifacts=tmp_path / "a",
                  gpu=H200, build=False, load_kernel=Recorder)
    assert op.selector.entries == {} and op.store_path is None
    with pytest.warns(NoKernelWarning):  # nothing prebuilt, nothing buildable: vendor
        assert op.route(FakeTensor(16, 4096), FakeTensor(4096, 4096)).reason == "vendor"


def test_load_finds_prebuilt_default_kernel_without_tvm(tmp_path):
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    space = GemmSm90Space()
    index = ArtifactIndex(tmp_path / "a")
    index.add(space, gemm(24), space.default_config(gemm(24)), dummy_artifact("x"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreMismatchWarning)
        op = load("gemm", store=tmp_path / "none.json", artifacts=tmp_path / "a", gpu=H200,
                  build=False, load_kernel=Recorder)
    assert op.route(FakeTensor(24, 4096), FakeTensor(4096, 4096)).reason == "default"



def test_an_index_travels_as_one_archive_and_serves_as_the_directory(tmp_path, monkeypatch):
    from autotune.dispatch.artifacts import open_artifacts, pack
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    space = GemmSm90Space()
    index = ArtifactIndex(tmp_path / "a")
    index.add(space, gemm(24), space.default_config(gemm(24)), dummy_artifact("x"))
    (tmp_path / "a" / "stray").mkdir()  # only what the index names travels
    assert pack(tmp_path / "a", tmp_path / "a.tar.xz") == 1
    unpacked = open_artifacts(tmp_path / "a.tar.xz")
    assert sorted(p.name for p in unpacked.iterdir()) == ["index.json", "x"]
    assert open_artifacts(tmp_path / "a.tar.xz") == unpacked  # unpacked once per content
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreMismatchWarning)
        op = load("gemm", store=tmp_path / "none.json", artifacts=tmp_path / "a.tar.xz",
                  gpu=H200, build=False, load_kernel=Recorder)
    assert op.route(FakeTensor(24, 4096), FakeTensor(4096, 4096)).reason == "default"


@pytest.mark.parametrize("content, why", [(None, "no such"), (b"not xz", "not a readable"),
                                          ("empty", "no index.json")])
def test_a_bad_artifact_archive_is_named(tmp_path, monkeypatch, content, why):
    import tarfile

    from autotune.dispatch.artifacts import open_artifacts
    from autotune.errors import UserError

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "k.tar.xz"
    if content == "empty":
        tarfile.open(path, "w:xz").close()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=why):
        open_artifacts(path)
    assert not list((tmp_path / "cache").glob("artifacts/*"))  # nothing half-unpacked kept


def test_pack_refuses_what_is_not_a_whole_index(tmp_path):
    from autotune.dispatch.artifacts import pack
    from autotune.errors import UserError

    with pytest.raises(UserError, match="not an artifact index"):
        pack(tmp_path, tmp_path / "k.tar.xz")
    (tmp_path / "index.json").write_text('{"k": {"artifact": "gone", "config": {}}}')
    with pytest.raises(UserError, match="1 indexed artifacts are missing"):
        pack(tmp_path, tmp_path / "k.tar.xz")
    with pytest.raises(UserError, match="ends in .tar.xz"):
        pack(tmp_path, tmp_path / "k.zip")


def test_indexed_compiler_without_tvm_names_a_kernel_not_prebuilt(tmp_path, monkeypatch):
    import autotune.bench.compiler as compiler_module
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    space, problem = GemmSm90Space(), gemm(24)
    config = space.default_config(problem)
    ArtifactIndex(tmp_path).add(space, space.binary_problem(problem),
                                space.compile_config(config), dummy_artifact("x"))
    compiler = compiler_module.IndexedCompiler(str(tmp_path))
    prebuilt = compiler.prebuilt(space, problem)
    other = {**config, "stages": config["stages"] - 1}
    assert prebuilt(config) and not prebuilt(other)
    monkeypatch.setattr(compiler_module, "tvm_available", lambda: False)
    assert compiler(space, config, problem).artifact_path.endswith("x")
    with pytest.raises(RuntimeError, match="not prebuilt in .* no TVM here"):
        compiler(space, other, problem)

def test_a_kernel_built_under_another_template_is_never_served(tmp_path):
    """The index keys on the template hash: after a template edit the old binary is not found
    (dispatch builds, or falls back), though the index still holds it."""
    from autotune.spaces.gemm_sm90 import GemmSm90Space

    space, problem = GemmSm90Space(), gemm(24)
    config = space.default_config(problem)
    index = ArtifactIndex(tmp_path)
    index.add(space, problem, config, dummy_artifact("x"))
    assert index.lookup(space, problem, config) is not None
    edited = tmp_path / "sm90.py"
    edited.write_text(Path(space.template_files()[0]).read_text() + "# edited\n")
    later = GemmSm90Space()
    later.template_files = lambda: [str(edited), *space.template_files()[1:]]
    assert ArtifactIndex(tmp_path).lookup(later, problem, config) is None
    assert ArtifactIndex(tmp_path).lookup(space, problem, config) is not None


def test_load_without_binding_or_gpu_is_a_user_error():
    from autotune.errors import UserError

    with pytest.raises(UserError, match="sm_80a"):
        load("gemm", gpu=Gpu("sm_80a", "A100"))


def test_prebuild_builds_the_pick_and_the_default(tmp_path):
    space = FakeGemmSpace()
    store = ConfigStore(expected_header(space, H200))
    for key, e in entries(gemm(16), gemm(64)).items():
        store.add(e)
    built = []

    def build(space, problem, config, index):
        built.append((problem["M"], config.get("tuned_for", "default")))
        return index.add(space, problem, config, dummy_artifact(f"k{len(built)}"))

    logs = []
    failures = prebuild(space, [store], [gemm(12)], ArtifactIndex(tmp_path), build=build,
                        log=logs.append)
    assert failures == 0
    assert sorted(built) == sorted([(12, gemm(16).key), (12, "default"), (16, gemm(16).key),
                                    (16, "default"), (64, gemm(64).key), (64, "default")])
    assert prebuild(space, [store], [gemm(12)], ArtifactIndex(tmp_path), build=build,
                    log=logs.append) == 0
    assert len(built) == 6 and logs[-1].endswith("present")


class GroupedGemmSpace(FakeGemmSpace):
    """`group` is a runtime knob: a launch argument after the buffers, not part of the binary."""

    runtime_knobs = ("group",)

    def default_config(self, problem):
        return {"blk": 8, "group": 4}


def test_runtime_knobs_share_one_binary_and_are_passed_at_launch(tmp_path):
    op, built, loaded = make_dispatcher(tmp_path, space=GroupedGemmSpace())
    problem = gemm(64)
    for group in (1, 2):
        op.provider.get(problem, {"blk": 8, "group": group})
    assert built == [(problem.key, {"blk": 8})] and len(loaded) == 1
    a, b = FakeTensor(64, 4096), FakeTensor(4096, 4096)
    op(a, b)  # the default config, group 4: still the same binary
    (recorder,) = op.provider.kernels.values()
    assert len(loaded) == 1 and recorder.calls[-1][:2] == (a, b) and recorder.calls[-1][3:] == (4,)


def test_parallel_prebuild_compiles_in_workers_and_indexes_here(tmp_path, monkeypatch):
    pytest.importorskip("tvm")
    import tirx.compile

    from autotune.spaces.gemm_sm90 import GemmSm90Space

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))  # cold, and the workers' too
    compiled_here = []
    nvrtc = tirx.compile._nvrtc_ptx
    monkeypatch.setattr(tirx.compile, "_nvrtc_ptx",
                        lambda *a: compiled_here.append(a) or nvrtc(*a))
    space = GemmSm90Space()
    problems = [space.parse_problem("64x256x128"), space.parse_problem("1024x256x128")]
    index = ArtifactIndex(tmp_path / "artifacts")
    assert prebuild(space, [], problems, index, procs=2, log=lambda line: None) == 0
    assert compiled_here == []  # every kernel came from the workers, through the cache
    for problem in problems:
        compiled = space.compile_config(space.default_config(problem))
        assert index.lookup(space, problem, compiled) is not None


class RuntimeMGemmSpace(FakeGemmSpace):
    """M is read off the tensors at launch: one binary serves every M of an (N, K)."""

    runtime_fields = ("M",)


def test_runtime_fields_share_one_binary_across_problems(tmp_path):
    op, built, loaded = make_dispatcher(tmp_path, space=RuntimeMGemmSpace())
    for m in (1, 7, 300):
        op(FakeTensor(m, 4096), FakeTensor(4096, 4096))
    assert len(op.routes) == 3 and len(built) == 1 and len(loaded) == 1
    index = json.loads((tmp_path / "artifacts" / "index.json").read_text())
    assert [key.split("|")[1] for key in index] == ["N=4096,K=4096,dtype=bfloat16"]
    op(FakeTensor(8, 4096), FakeTensor(1024, 4096))  # another N: another binary
    assert len(built) == 2
