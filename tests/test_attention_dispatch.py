"""Attention dispatched: `autotune.load("attention")` picks fa4_sm90 on a Hopper, routes calls by
the store and the bucket rule, launches one binary per (heads, head_dim, causal, dtype) for every
length with the config's launch scalars, and serves torch.ops.autotune.attention, also under
torch.compile. On the CPU: kernels are stand-ins that compute the reference and record what
they were launched with; artifacts are placeholders in a real artifact index."""

import warnings

import pytest

import tirx
from autotune.dispatch import ArtifactIndex, NoKernelWarning, load, resolve_space
from autotune.ops.attention import ATTENTION
from autotune.spaces.fa4_sm90 import Fa4Sm90Space
from autotune.store import ConfigStore, Entry, Gpu, StoreMismatchWarning, expected_header
from autotune.store.format import config_id

torch = pytest.importorskip("torch")

H100 = Gpu("sm_90a", "NVIDIA H100 80GB HBM3", "13.0", "13.0")
SPACE = Fa4Sm90Space()
LAUNCHES = []  # (artifact key, problem the kernel ran, launch scalars) per launch


def placeholder(key):
    launch = tirx.LaunchSpec(symbol="k", args=(), params=(), tensor_maps=(), grid=(1, 1, 1),
                             block=(128, 1, 1), cluster=None, dynamic_smem=0)
    return tirx.Artifact(key=key, arch="sm_90a", launch=launch,
                         resources=tirx.Resources(32, 0, 0, 0, 0, 0, 128), versions={},
                         cubin=b"\0", source="// k")


class ReferenceKernel:
    """Loaded from an artifact path: computes what the kernel must (o and lse) and records
    the launch."""

    def __init__(self, path):
        self.key = path.name

    def __call__(self, q, k, v, o, lse, *scalars, check=True):
        problem = ATTENTION.problem(str(q.dtype).removeprefix("torch."), batch=q.shape[0],
                                    seqlen_q=q.shape[1], seqlen_k=k.shape[1],
                                    heads_q=q.shape[2], heads_kv=k.shape[2],
                                    head_dim=q.shape[3], causal=self.causal)
        ref_o, ref_lse = ATTENTION.reference(problem, [q, k, v, o, lse])
        o.copy_(ref_o)
        lse.copy_(ref_lse)
        LAUNCHES.append((self.key, problem, scalars))

    @property
    def causal(self):
        return self.key.endswith("causal")


def attn(text):
    return SPACE.parse_problem(text)


TUNED = attn("1x256/32:8/128/causal")
TUNED_CONFIG = {**SPACE.default_config(TUNED), "block_n": 112, "persistent": True}


@pytest.fixture
def dispatcher(tmp_path):
    """A dispatcher over a store of tuned causal 32:8 shapes whose records show TUNED_CONFIG
    beating the default on each (the evidence dispatch needs to serve it elsewhere), and every
    binary it may need prebuilt (placeholders named after their causality)."""
    store = ConfigStore(expected_header(SPACE, H100))
    ids = config_id(TUNED_CONFIG), config_id(SPACE.default_config(TUNED))
    for problem in (TUNED, attn("1x512/32:8/128/causal"), attn("1x1024/32:8/128/causal")):
        store.add(Entry(problem.key, TUNED_CONFIG, 1.0, default_ms=1.1, vendor_ms=1.2,
                        measured=dict(zip(ids, (1.0, 1.1)))))
    index = ArtifactIndex(tmp_path / "artifacts")
    for problem, config, name in ((TUNED, TUNED_CONFIG, "tuned-causal"),
                                  (TUNED, None, "default-causal"),
                                  (attn("1x64/32:8/128"), None, "default-full"),
                                  (attn("2x4x64/8/128"), None, "packed-full")):
        config = config or SPACE.default_config(problem)
        index.add(SPACE, SPACE.binary_problem(problem), SPACE.compile_config(config),
                  placeholder(name))
    LAUNCHES.clear()
    return load("attention", store=store, artifacts=tmp_path / "artifacts", gpu=H100,
                build=False, load_kernel=ReferenceKernel)


def qkv(b, sq, sk, hq=32, hkv=8, d=128, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, sq, hq, d, generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(b, sk, hkv, d, generator=gen).to(torch.bfloat16) for _ in range(2))
    return q, k, v


def test_attention_resolves_to_the_hopper_plugin():
    assert type(resolve_space("attention", "sm_90a")) is Fa4Sm90Space


@pytest.mark.parametrize("b, sq, sk, causal, reason, binary", [
    (1, 256, 256, True, "exact", "tuned-causal"),
    (2, 200, 130, True, "bucket", "tuned-causal"),  # lengths in 256's bucket, batch free
    (2, 70, 90, False, "default", "default-full"),  # nothing tuned without a mask
])
def test_routes_follow_the_store_and_one_binary_serves_every_length(dispatcher, b, sq, sk,
                                                                    causal, reason, binary):
    q, k, v = qkv(b, sq, sk)
    route = dispatcher.route(q, k, v, causal)
    assert route.reason == reason
    if reason != "default":
        assert route.tuned == TUNED.key and route.config == TUNED_CONFIG
    else:
        assert route.config == SPACE.default_config(route.problem)
    o = dispatcher(q, k, v, causal)
    (key, problem, scalars), = LAUNCHES
    assert key == binary and problem["seqlen_q"] == sq and problem["batch"] == b
    assert list(scalars) == SPACE.launch_scalars(route.config)
    want = ATTENTION.reference(problem, [q, k, v, None, None])[0]
    assert o.shape == q.shape and float((o.float() - want).abs().max()) < 1e-2


def test_a_decode_step_runs_packed_on_the_mha_binary(dispatcher):
    q, k, v = qkv(2, 1, 300)
    assert dispatcher.route(q, k, v, False).problem == attn("2x4x300/8/128")
    o = dispatcher(q, k, v, False)
    (key, problem, _), = LAUNCHES
    assert key == "packed-full" and (problem["heads_q"], problem["seqlen_q"]) == (8, 4)
    unpacked = ATTENTION.problem("bfloat16", batch=2, seqlen_q=1, seqlen_k=300, heads_q=32,
                                 heads_kv=8, head_dim=128, causal=False)
    want = ATTENTION.reference(unpacked, [q, k, v, None, None])[0]
    assert float((o.float() - want).abs().max()) < 1e-2


def test_a_head_dim_no_binary_takes_falls_back_to_sdpa_and_says_why(dispatcher):
    q, k, v = qkv(1, 33, 33, hq=4, hkv=4, d=96)
    with pytest.warns(NoKernelWarning, match="head_dim=96 is not one of"):
        o = dispatcher(q, k, v, True)
    assert not LAUNCHES and dispatcher.route(q, k, v, True).reason == "vendor"
    want = ATTENTION.reference(ATTENTION.call_problem((q, k, v, True)), [q, k, v, None, None])[0]
    assert float((o.float() - want).abs().max()) < 1e-2


def test_the_custom_op_serves_eager_and_compiled_calls(dispatcher):
    from autotune.dispatch.torch_op import register_torch_op

    op = register_torch_op(dispatcher)
    q, k, v = qkv(1, 96, 96, seed=3)
    eager = torch.ops.autotune.attention(q, k, v, True)
    assert len(LAUNCHES) == 1 and LAUNCHES[0][1]["causal"]

    def block(q, k, v):  # attention between two elementwise ops, as in a model
        return op(q * 1, k, v, True).float().sum(-1) + 1

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(q, k, v), eager.float().sum(-1) + 1)
    assert len(LAUNCHES) == 2  # the compiled graph called the op, which launched the kernel


def test_an_unusable_store_leaves_the_defaults(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreMismatchWarning)
        op = load("attention", store=tmp_path / "none.json", artifacts=tmp_path / "a",
                  gpu=H100, build=False, load_kernel=ReferenceKernel)
    assert op.selector.entries == {}
    q, k, v = qkv(1, 8, 8)
    with pytest.warns(NoKernelWarning, match="no kernel for"):  # nothing prebuilt here
        assert op.route(q, k, v, False).reason == "vendor"
