"""What an attention kernel must compute, in float32 with torch on the GPU (imported lazily:
only GPU machines have torch), and how a kernel's output is checked against that: the GPU
counterpart of kernels/fa4/reference.py (numpy, float64, on the CPU; too slow at 16k tokens).

Conventions are the same (kernels/fa4/problem.py): FlashAttention's layout, GQA by head groups,
causal masks aligned to the bottom right, and a query row that sees no key gets o = 0,
lse = +inf.
"""

from __future__ import annotations

# Error bounds against the float32 reference, by input dtype: the kernel rounds P to the input
# dtype before P V (as FlashAttention does), so O carries that rounding; the log-sum-exp is
# computed in float32 from the same scores and carries only accumulation-order differences.
# rel: |o - ref| / |ref| over the whole tensor (Frobenius); max_abs: any one element.
TOLERANCES = {
    "bfloat16": {"o_rel": 1e-2, "o_max_abs": 4e-2, "lse_max_abs": 2e-3},
    "float16": {"o_rel": 2e-3, "o_max_abs": 1e-2, "lse_max_abs": 2e-3},
}


def causal_mask(seqlen_q: int, seqlen_k: int, device):
    """True where query i may see key j: j <= i + seqlen_k - seqlen_q (bottom-right aligned)."""
    import torch

    i = torch.arange(seqlen_q, device=device)[:, None]
    j = torch.arange(seqlen_k, device=device)[None, :]
    return j <= i + (seqlen_k - seqlen_q)


def check_rows(seqlen_q: int, device, sample: int = 512, seed: int = 0):
    """Query rows a check compares: all of a short sequence; of a long one the first and last
    64 (the tile edges and the causal extremes) and a seeded random sample, since the float32
    reference of every row of a 16k sequence costs a minute of GPU. Every element is still
    checked for having been written (NaN)."""
    import torch

    if seqlen_q <= sample:
        return torch.arange(seqlen_q, device=device)
    g = torch.Generator().manual_seed(seed)
    middle = torch.randperm(seqlen_q - 128, generator=g)[:sample - 128] + 64
    ends = torch.cat([torch.arange(64), torch.arange(seqlen_q - 64, seqlen_q)])
    return torch.cat([ends, middle]).sort().values.to(device)


def attention_reference(q, k, v, causal: bool, scale: float, rows=None, chunk: int = 1024):
    """(o, lse) in float32 for q (b, sq, hq, d), k and v (b, sk, hkv, d), for the query rows
    `rows` (all when None), computed on upcast inputs a block of `chunk` rows at a time.
    o: (b, len(rows), hq, d); lse: (b, hq, len(rows)), natural log."""
    import torch

    b, sq, hq, d = q.shape
    rows = torch.arange(sq, device=q.device) if rows is None else rows
    group = hq // k.shape[2]
    kf = k.float().repeat_interleave(group, dim=2).permute(0, 2, 3, 1)  # (b, hq, d, sk)
    vf = v.float().repeat_interleave(group, dim=2).transpose(1, 2)  # (b, hq, sk, d)
    visible = causal_mask(sq, k.shape[1], q.device)[rows] if causal else None
    o = torch.empty(b, len(rows), hq, d, dtype=torch.float32, device=q.device)
    lse = torch.empty(b, hq, len(rows), dtype=torch.float32, device=q.device)
    for r0 in range(0, len(rows), chunk):
        r1 = min(len(rows), r0 + chunk)
        s = torch.matmul(q[:, rows[r0:r1]].float().transpose(1, 2), kf) * scale  # (b,hq,r,sk)
        if visible is not None:
            s = s.masked_fill(~visible[r0:r1], float("-inf"))
        rows_lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - rows_lse[..., None]).nan_to_num(0.0)  # a row with no key: p = 0
        o[:, r0:r1] = torch.matmul(p, vf).transpose(1, 2)
        lse[:, :, r0:r1] = torch.where(torch.isinf(rows_lse), float("inf"), rows_lse)
    return o, lse


def errors(o, lse, ref_o, ref_lse, rows) -> dict:
    """How far (o, lse) at query rows `rows` is from the reference for those rows, and what a
    check must refuse outright anywhere: values never written (NaN: outputs are poisoned before
    a launch) and +inf where a row has keys."""
    import torch

    o32, lse_r = o[:, rows].float(), lse[:, :, rows]
    finite = torch.isfinite(ref_lse)
    return {
        "o_nan": int(torch.isnan(o).sum()),
        "lse_nan": int(torch.isnan(lse).sum()),
        "lse_inf_mismatch": int((torch.isinf(lse_r) != ~finite).sum()),
        "o_rel": float((o32 - ref_o).norm() / ref_o.norm().clamp_min(1e-30)),
        "o_max_abs": float((o32 - ref_o).abs().max()) if o32.numel() else 0.0,
        "lse_max_abs": float((lse_r[finite] - ref_lse[finite]).abs().max()) if finite.any()
        else 0.0,
    }


def failures(err: dict, dtype: str) -> list[str]:
    """The checks `err` (from errors()) fails for inputs of `dtype`; [] when it passes."""
    out = [f"{k}={err[k]}" for k in ("o_nan", "lse_nan", "lse_inf_mismatch") if err[k]]
    out += [f"{k}={err[k]:.3g} > {bound}" for k, bound in TOLERANCES[dtype].items()
            if not err[k] <= bound]
    return out
