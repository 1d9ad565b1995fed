"""The CUDA-graph profile (autotune/bench/graph_profile.py): replays split into per-kernel
medians, kernels grouped and named from PyTorch's, cuBLAS's, cuDNN's and our kernel names, and
(on a GPU) captured graphs' kernels found in order, each graph's own."""

from __future__ import annotations

import pytest

from autotune.bench import graph_profile as gp

MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16,"
       " c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
       "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
       "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)")
SILU = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::"
        "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
        "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}, "
        "std::array<char*, 2ul>)")
POW = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
       "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)"
       "#1}, std::array<char*, 2ul> >(int, float, std::array<char*, 2ul>)")
MEAN = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
        "float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
        "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)")
CAST = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}, "
        "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int> >(int, ...)")
CUBLAS = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopB_NNT"
CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x128x128_4x1x1"


@pytest.mark.parametrize("name, group, short", [
    (MUL, "elementwise", "vectorized_elementwise_kernel[MulFunctor]"),
    (SILU, "silu", "vectorized_elementwise_kernel[silu_kernel]"),
    (POW, "norm", "vectorized_elementwise_kernel[pow_tensor_scalar_kernel_impl]"),
    (MEAN, "norm", "reduce_kernel[MeanOps]"),
    (CAST, "copy/cast", "unrolled_elementwise_kernel[direct_copy_kernel_cuda]"),
    (CUBLAS, "gemm", CUBLAS),
    (CUDNN, "attention", CUDNN[:57] + "..."),
    ("gemm_kernel", "gemm", "gemm_kernel"),
    ("attention_kernel", "attention", "attention_kernel"),
    ("some_kernel", "other", "some_kernel"),
])
def test_kernels_are_grouped_and_named(name, group, short):
    assert gp.group_of(name) == group
    assert gp.short_name(name) == short


def test_replays_split_into_per_kernel_medians_and_gaps():
    # two kernels per replay, three replays; the second kernel takes 5, 7, 6 us; 1 us gap
    events = []
    for r, second in enumerate((5.0, 7.0, 6.0)):
        t = 100.0 * r
        events += [("gemm_kernel", t, t + 10.0), ("attention_kernel", t + 11.0, t + 11.0 + second)]
    profile = gp.per_replay(gp.split_replays(events[::-1], 3))  # in any order
    assert [(k.position, k.name, k.us) for k in profile.kernels] == [
        (0, "gemm_kernel", 10.0), (1, "attention_kernel", 6.0)]
    assert profile.span_us == 17.0 and profile.busy_us == 16.0 and profile.gaps_us == 1.0
    assert profile.by_group() == {"gemm": (1, 10.0), "attention": (1, 6.0), "gaps": (0, 1.0)}
    table = gp.group_table({"torch": profile, "ours": profile})
    assert "| gemm | 1 | 10.0 | 1 | 10.0 | +0.0 |" in table
    assert "| span (one replay) | 2 | 17.0 | 2 | 17.0 | +0.0 |" in table
    assert "| 1 | `attention_kernel` | attention | 6.0 |" in gp.kernel_table(profile)


def test_events_of_unlike_replays_are_refused():
    with pytest.raises(ValueError, match="do not split into 2 replays"):
        gp.split_replays([("a", 0.0, 1.0), ("b", 2.0, 3.0), ("a", 5.0, 6.0)], replays=2)
    runs = gp.split_replays([("a", 0.0, 1.0), ("b", 2.0, 3.0), ("b", 5.0, 6.0), ("a", 7.0, 8.0)], 2)
    with pytest.raises(ValueError, match="ran different kernels"):
        gp.per_replay(runs)


@pytest.mark.gpu
def test_a_captured_graph_profiles_its_kernels_in_order():
    import torch

    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    out = {}

    def body():
        out["y"] = torch.relu(a @ a) + 1

    def other():
        out["z"] = a * 2

    profiles = gp.profile_graphs({"mm": body, "scale": other}, rounds=2, replays=3, warm_ms=5)
    mm, scale = profiles["mm"], profiles["scale"]
    assert mm.kernels[0].group == "gemm" and len(mm.kernels) >= 2  # matmul, then relu, add
    assert [k.group for k in scale.kernels] == ["elementwise"] and mm.replays == 6
    assert all(k.us > 0 for k in mm.kernels) and mm.span_us >= mm.busy_us
