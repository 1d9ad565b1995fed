"""Attention forward, whatever the template or arch (Hopper fa4_sm90, Blackwell fa4_sm100): its
problem, inputs, reference, vendor baselines and cost, and its torch binding.

The problem is kernels/fa4/problem.py's AttentionProblem (head counts, head_dim, causal, dtype:
what a binary is compiled for) plus the sizes a launch reads off its tensors (batch, seqlen_q,
seqlen_k). Layout is FlashAttention's: q (batch, seqlen_q, heads_q, head_dim), k and v
(batch, seqlen_k, heads_kv, head_dim), o like q, lse (batch, heads_q, seqlen_q) float32; causal
masks aligned to the bottom right. The kernels take (Q, K, V, O, LSE) then their launch scalars.

Torch binding: op(q, k, v, causal=False) -> o, as flash_attn_func(q, k, v, causal=causal). The
log-sum-exp the kernels also write is scratch here (forward-only inference does not read it).
A decode step of GQA runs as the problem with its query heads packed into rows (packs_heads).
Tensors are used through their methods (no torch import at module level)."""

from __future__ import annotations

import re

from kernels.fa4.problem import AttentionProblem
from kernels.fa4.problem import flops as attention_flops
from tirx.errors import LayoutError

from .base import Launcher, Op, dtype_name
from .bucket import BucketRule
from .problem import Problem, Value

RUNTIME_FIELDS = ("batch", "seqlen_q", "seqlen_k")  # the kernels read them off the tensors
# Vendor baselines: torch SDPA through one backend each. cuDNN is the one to beat (what
# `vendor` times); FlashAttention-2 is reported beside it.
VENDORS = {"cudnn": "CUDNN_ATTENTION", "fa2": "FLASH_ATTENTION"}
# Every SDPA backend that computes on a GPU or CPU, in torch's own priority order.
SDPA_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION")
# What attention is tuned and benchmarked on: the benchmark (head_dim 128, 16 heads,
# 16k tokens per batch, causal and not) and the Llama-3-8B decoder block's (GQA 32:8): prefill,
# and a decode step of 64 sequences over a 4k cache as it runs, its 4 query heads per K/V head
# packed into query rows (`packs_heads`: a call 64x1x4096/32:8/128 is this problem).
BENCHMARK_SHAPES = tuple(f"{16384 // s}x{s}/16/128{c}" for s in (1024, 4096, 8192, 16384)
                         for c in ("", "/causal")) + ("1x4096/32:8/128/causal", "64x4x4096/8/128")
SHAPE_SYNTAX = "BATCHxSEQ[xSEQ_K]/HEADS[:KV_HEADS]/HEAD_DIM[/causal] (e.g. 4x4096/32:8/128/causal)"


def fa4_problem(problem: Problem) -> AttentionProblem:
    """The compile-time part of an attention Problem, as the kernels take it."""
    return AttentionProblem(head_dim=problem["head_dim"], heads_q=problem["heads_q"],
                            heads_kv=problem["heads_kv"], causal=problem["causal"],
                            dtype=problem.dtype)


def sdpa(q, k, v, causal: bool, backend: str | None = None, fallback: bool = False):
    """torch's scaled_dot_product_attention on FlashAttention-layout tensors, with our
    conventions (bottom-right causal alignment, GQA by head groups), through one SDPA backend
    (a VENDORS key) or, with None, the one torch picks. With `fallback`, `backend` goes first
    and torch's others serve the calls it refuses. Returns o in q's layout. (Causal with
    seqlen_q != seqlen_k goes through torch's lower-right causal bias, which picks its own
    backend: FlashAttention-2 where it can.)"""
    import contextlib

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    sq, sk = q.shape[1], k.shape[1]
    mask, is_causal = None, causal
    if causal and sq != sk:  # SDPA's is_causal aligns top-left
        mask, is_causal = causal_lower_right(sq, sk), False
    group = q.shape[2] // k.shape[2]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if backend and fallback:
        first = getattr(SDPBackend, VENDORS[backend])
        context = sdpa_kernel([first] + [getattr(SDPBackend, b) for b in SDPA_BACKENDS
                                         if getattr(SDPBackend, b) != first], set_priority=True)
    else:
        context = (sdpa_kernel(getattr(SDPBackend, VENDORS[backend])) if backend
                   else contextlib.nullcontext())
    with context:
        o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=is_causal,
                                           enable_gqa=group > 1)
    return o.transpose(1, 2)


def packs_heads(seqlen_q: int, heads_q: int, heads_kv: int) -> bool:
    """Whether a call runs with its query heads packed into query rows: a decode step (one
    query per sequence) of GQA. Its group's query heads see the same keys, so as query rows of
    one head they share each K/V tile load, and a tile of 64+ rows holds `group` rows instead
    of one (FlashAttention-3's pack_gqa). Causal or not is the same there: the one query sees
    every key (bottom-right alignment)."""
    return seqlen_q == 1 and heads_q > heads_kv


class Attention(Op):
    name = "attention"
    fields = {"batch": int, "seqlen_q": int, "seqlen_k": int, "heads_q": int, "heads_kv": int,
              "head_dim": int, "causal": bool}
    # A bucket keeps what changes the kernel's character (head_dim, causal, the GQA ratio) and
    # rounds the sequence lengths up to powers of two; batch (and the head count at one ratio)
    # only scale the grid.
    bucket = BucketRule(same=("head_dim", "causal", "gqa"), pow2=("seqlen_q", "seqlen_k"),
                        derive=lambda f: {"gqa": f["heads_q"] // max(f["heads_kv"], 1)})
    schema = "(Tensor q, Tensor k, Tensor v, bool causal=False) -> Tensor"

    # -- problems -------------------------------------------------------------------------
    def problem(self, dtype: str = "bfloat16", **values: Value) -> Problem:
        problem = super().problem(dtype, **values)
        bad = [f"{f}={problem[f]} must be >= 1" for f in RUNTIME_FIELDS if problem[f] < 1]
        bad += fa4_problem(problem).errors()
        if bad:
            raise ValueError(f"attention {problem.key}: " + "; ".join(bad))
        return problem

    def parse(self, text: str, dtype: str = "bfloat16") -> Problem:
        if "=" in (text or ""):
            return super().parse(text, dtype)
        m = re.fullmatch(r"\s*(\d+)x(\d+)(?:x(\d+))?/(\d+)(?::(\d+))?/(\d+)(/causal)?\s*",
                         text or "")
        if not m:
            raise ValueError(f"attention shape {text!r} is not of the form {SHAPE_SYNTAX}")
        b, sq, sk, hq, hkv, d, causal = m.groups()
        return self.problem(dtype, batch=int(b), seqlen_q=int(sq), seqlen_k=int(sk or sq),
                            heads_q=int(hq), heads_kv=int(hkv or hq), head_dim=int(d),
                            causal=bool(causal))

    @staticmethod
    def untunable(problem: Problem) -> list[str]:
        """Why a study cannot tune `problem` (sentences; [] when it can), whatever the template:
        causal with seqlen_q > seqlen_k leaves query rows without a key, whose log-sum-exp is
        +inf, an output value the runner's checks refuse. Dispatch still serves such calls."""
        if problem["causal"] and problem["seqlen_q"] > problem["seqlen_k"]:
            return [f"causal with seqlen_q={problem['seqlen_q']} > seqlen_k={problem['seqlen_k']} "
                    "leaves query rows without a key (lse = +inf), which a tuning check cannot "
                    "compare; dispatch still serves such calls"]
        return []

    @staticmethod
    def shape(problem: Problem) -> str:
        """The problem in parse's short syntax (for command lines and labels)."""
        p = problem
        lengths = (f"{p['seqlen_q']}" if p["seqlen_q"] == p["seqlen_k"]
                   else f"{p['seqlen_q']}x{p['seqlen_k']}")
        heads = (f"{p['heads_q']}" if p["heads_q"] == p["heads_kv"]
                 else f"{p['heads_q']}:{p['heads_kv']}")
        causal = "/causal" if p["causal"] else ""
        return f"{p['batch']}x{lengths}/{heads}/{p['head_dim']}{causal}"

    def flops(self, problem: Problem) -> float:
        return attention_flops(fa4_problem(problem), problem["batch"], problem["seqlen_q"],
                               problem["seqlen_k"])

    def bytes_moved(self, problem: Problem) -> float:
        """q, k, v read and o written once (2-byte elements), lse written (4 bytes)."""
        b, sq, sk = problem["batch"], problem["seqlen_q"], problem["seqlen_k"]
        hq, hkv, d = problem["heads_q"], problem["heads_kv"], problem["head_dim"]
        return 2.0 * b * d * (2 * sq * hq + 2 * sk * hkv) + 4.0 * b * hq * sq

    # -- checking -------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, seed: int, device: str = "cuda") -> list:
        import torch

        dtype = getattr(torch, problem.dtype)
        gen = torch.Generator(device=device).manual_seed(seed)
        b, sq, sk = problem["batch"], problem["seqlen_q"], problem["seqlen_k"]
        hq, hkv, d = problem["heads_q"], problem["heads_kv"], problem["head_dim"]
        q, k, v = (torch.randn(b, s, h, d, generator=gen, device=device).to(dtype)
                   for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
        o = torch.empty(b, sq, hq, d, dtype=dtype, device=device)
        lse = torch.empty(b, hq, sq, dtype=torch.float32, device=device)
        return [q, k, v, o, lse]

    def output_indices(self, problem: Problem) -> list[int]:
        return [3, 4]

    def reference(self, problem: Problem, inputs: list) -> list:
        """o and lse in float32 from the upcast inputs (kernels/fa4/reference_torch.py)."""
        from kernels.fa4.reference_torch import attention_reference

        q, k, v, _, _ = inputs
        return list(attention_reference(q, k, v, problem["causal"], fa4_problem(problem).scale))

    def vendor(self, problem: Problem, inputs: list, backend: str = "cudnn"):
        """torch SDPA on make_inputs' tensors through `backend` (a VENDORS key): cuDNN by
        default. It returns its own o (SDPA takes no output buffer; a copy into ours would
        be timed as the vendor's). A backend that refuses GQA gets k and v with their heads
        repeated, made here, untimed: how one would call it."""
        q, k, v, _, _ = inputs
        causal, group = problem["causal"], problem["heads_q"] // problem["heads_kv"]
        try:
            sdpa(q, k, v, causal, backend)  # the backend's own checks, once
        except RuntimeError:
            if group == 1:
                raise
            k, v = (t.repeat_interleave(group, dim=2) for t in (k, v))
        return lambda: sdpa(q, k, v, causal, backend)

    def other_vendors(self, problem: Problem, inputs: list) -> dict:
        """The other SDPA backends of VENDORS (FlashAttention-2), for reports."""
        return {name: self.vendor(problem, inputs, name) for name in VENDORS if name != "cudnn"}

    # -- the torch binding ----------------------------------------------------------------
    def call_problem(self, args: tuple) -> Problem:
        """The problem the kernel runs for this call: the call's own, or for a decode step of
        GQA its heads packed into query rows (`packs_heads`)."""
        if len(args) not in (3, 4):
            raise ValueError(f"attention takes (q, k, v, causal=False), got {len(args)} arguments")
        q, k, v = args[:3]
        causal = bool(args[3]) if len(args) == 4 else False
        shapes = [tuple(t.shape) for t in (q, k, v)]
        if (any(len(s) != 4 for s in shapes) or shapes[1] != shapes[2]
                or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]):
            raise ValueError(f"attention: q {shapes[0]}, k {shapes[1]}, v {shapes[2]} are not "
                             "(batch, seqlen_q, heads_q, head_dim) and two equal (batch, "
                             "seqlen_k, heads_kv, head_dim)")
        dtypes = {dtype_name(t.dtype) for t in (q, k, v)}
        if len(dtypes) != 1:
            raise ValueError(f"attention: q, k, v have different dtypes {sorted(dtypes)}")
        b, sq, hq, d = q.shape
        sk, hkv = k.shape[1], k.shape[2]
        if hkv and hq % hkv == 0 and packs_heads(sq, hq, hkv):
            return self.problem(dtypes.pop(), batch=b, seqlen_q=hq // hkv, seqlen_k=sk,
                                heads_q=hkv, heads_kv=hkv, head_dim=d, causal=False)
        return self.problem(dtypes.pop(), batch=b, seqlen_q=sq, seqlen_k=sk, heads_q=hq,
                            heads_kv=hkv, head_dim=d, causal=causal)

    def launcher(self, args: tuple, problem: Problem, kernel) -> Launcher:
        """Run the kernel on q, k, v as they are into a fresh o (or `out`) and a scratch lse; a
        decode step of GQA with its heads packed (`packs_heads`: that reshape copies q).

        A fused qkv projection's q, k, v are strided views (batch and sequence strides past
        contiguous): the fa4 kernels read them through TMA descriptors only, which tirx encodes
        with the views' own strides (tirx ArgSpec.strided), so nothing is copied. A kernel that
        cannot take a view refuses it before launching (tirx.LayoutError): that call runs on
        contiguous copies (and a contiguous o, copied into `out`), and after a kernel that takes
        the argument contiguous only (its binary reads it through a pointer), every call does."""
        b, sq, hq, d = args[0].shape
        hkv = args[1].shape[2]
        packed = packs_heads(sq, hq, hkv)
        lse_shape = (problem["batch"], problem["heads_q"], problem["seqlen_q"])
        views = [True]  # False once the kernel refused a view as such: copy from then on

        def launch(args, out):
            import torch

            q, k, v = args[:3]
            if packed:  # query head j * group + g becomes query row g of key/value head j
                q = q.reshape(b, hkv, hq // hkv, d).transpose(1, 2).contiguous()
            o = q.new_empty(q.shape) if out is None or packed else out
            lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
            ran = False
            if views[0]:
                try:  # shapes and dtype are fixed by the route's key; layouts are checked
                    kernel(q, k, v, o, lse, check=False)
                    ran = True
                except LayoutError as e:
                    views[0] = not e.contiguous_only
            if not ran:
                dense_o = o if o.is_contiguous() else q.new_empty(q.shape)
                kernel(q.contiguous(), k.contiguous(), v.contiguous(), dense_o, lse, check=False)
                if dense_o is not o:
                    o.copy_(dense_o)
            if not packed:
                return o
            o = o.transpose(1, 2).reshape(b, sq, hq, d)
            return o if out is None else out.copy_(o)

        return launch

    def vendor_launcher(self, args: tuple, problem: Problem) -> Launcher:
        """torch SDPA through cuDNN, the vendor that `vendor` times and dispatch's vendor-faster
        rule compares with; torch's own choice where cuDNN refuses the call. torch's choice
        alone is not cuDNN in every process: in the decoder block's (whose torch side runs an
        sdpa_kernel priority context) it was FlashAttention-2, 528 vs 269 us at the 4k causal
        prefill on an H100 (studies/2026-11-23-h100-block-s4/)."""

        def launch(args, out):
            o = sdpa(*args[:3], bool(args[3]) if len(args) == 4 else False, "cudnn",
                     fallback=True)
            if out is None:
                return o.contiguous()  # as the kernels' o (and the fake's)
            out.copy_(o)
            return out

        return launch

    def fake(self, q, k, v, causal=False):
        return q.new_empty(q.shape)


ATTENTION = Attention()
