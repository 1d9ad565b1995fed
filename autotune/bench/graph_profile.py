"""Where the time of a CUDA graph goes, kernel by kernel: the graph is captured, replayed under
torch.profiler with CUDA activities (CUPTI records each kernel a replay runs), and every kernel
of one replay gets its median time over the replays, a group (GEMM, attention, copies, ...) and
a short name. Graphs compared with each other are profiled in interleaved rounds, each burst
after the protocol's warm-up. A replay's span minus its kernels' time is the GPU's idle time
between kernels (launch gaps). Used by `examples/llama_block.py --profile` to attribute the
block's time.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from typing import Callable

from ..runner.protocol import WARM_MS, capture_graph, warm_replays
from ..runner.timing import rotated

# (group, pattern on the kernel's full name), first match wins: attention before GEMM (cuDNN's
# attention kernels name their MMAs), copies before the elementwise kernels that carry them.
GROUPS = (
    ("attention", r"attention_kernel|sdpa|fmha|flash_fwd|flash_attn"),
    ("gemm", r"gemm_kernel|gemm|nvjet|xmma|cutlass|cublas"),
    ("copy/cast", r"copy|Copy|CatArray|[Mm]emcpy"),
    ("norm", r"reduce_kernel|rsqrt|pow_tensor_scalar"),
    ("silu", r"silu"),
    ("elementwise", r"elementwise|[Mm]emset|fill"),
)
# What a templated PyTorch kernel computes, from its template arguments: the innermost functor
# (BinaryFunctor<..., MulFunctor<float>> -> MulFunctor), else the kernel function of a lambda
# (silu_kernel), else a reduction's ops (MeanOps).
_HINTS = (r"(\w+Functor)\b", r"::(\w+_kernel\w*)[<(]", r"::(\w+Ops)<")


def group_of(name: str) -> str:
    """The group a kernel's full name belongs to ("other" when no pattern matches)."""
    for group, pattern in GROUPS:
        if re.search(pattern, name):
            return group
    return "other"


def short_name(name: str, width: int = 60) -> str:
    """A kernel's name without its return type, namespaces and template arguments, with the
    functor of a templated PyTorch kernel: `vectorized_elementwise_kernel[MulFunctor]`."""
    base = re.sub(r"^void\s+", "", name)
    base = re.split(r"[<(]", base, maxsplit=1)[0].split("::")[-1] or name
    rest = name[len(name.split("<", 1)[0]):]
    for hint in _HINTS:
        found = re.findall(hint, rest.split(">(", 1)[0])  # the template arguments only
        if found:
            base = f"{base}[{found[-1]}]"
            break
    return base if len(base) <= width else base[:width - 3] + "..."


@dataclasses.dataclass(frozen=True)
class KernelTime:
    position: int  # order of start within a replay
    name: str  # full (demangled) name
    us: float  # median over the replays

    @property
    def group(self) -> str:
        return group_of(self.name)


@dataclasses.dataclass(frozen=True)
class GraphProfile:
    kernels: list[KernelTime]
    span_us: float  # median over replays: first kernel's start to last kernel's end
    replays: int

    @property
    def busy_us(self) -> float:
        return sum(k.us for k in self.kernels)

    @property
    def gaps_us(self) -> float:
        return self.span_us - self.busy_us

    def by_group(self) -> dict[str, tuple[int, float]]:
        """group -> (kernels per replay, us per replay), plus "gaps" (idle between kernels)."""
        out: dict[str, tuple[int, float]] = {}
        for k in self.kernels:
            n, us = out.get(k.group, (0, 0.0))
            out[k.group] = (n + 1, us + k.us)
        out["gaps"] = (0, self.gaps_us)
        return out


def split_replays(events: list[tuple[str, float, float]], replays: int) -> list[list]:
    """The device events (name, start us, end us) of `replays` back-to-back replays of one graph,
    one list per replay: every replay runs the same kernels in the same order, so sorted by
    start they fall into `replays` equal runs; ValueError when they do not."""
    events = sorted(events, key=lambda e: e[1])
    if not events or len(events) % replays:
        raise ValueError(f"{len(events)} kernel events do not split into {replays} replays of "
                         "one graph (another stream ran kernels while profiling?)")
    n = len(events) // replays
    return [events[r * n:(r + 1) * n] for r in range(replays)]


def per_replay(runs: list[list]) -> GraphProfile:
    """GraphProfile of one graph from its replays' events (split_replays' lists): each kernel's
    median time, and the median span of a replay."""
    names = [e[0] for e in runs[0]]
    if any([e[0] for e in run] != names for run in runs):
        raise ValueError("the replays ran different kernels: not one graph's replays")
    kernels = [KernelTime(i, names[i], statistics.median(run[i][2] - run[i][1] for run in runs))
               for i in range(len(names))]
    span = statistics.median(max(e[2] for e in run) - run[0][1] for run in runs)
    return GraphProfile(kernels, span, len(runs))


def _replay_ms(graph) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def profile_graphs(bodies: dict[str, Callable[[], None]], rounds: int = 3, replays: int = 10,
                   warm_ms: float = WARM_MS) -> dict[str, GraphProfile]:
    """Each body (launches on the current stream) captured in a CUDA graph and profiled over
    `rounds` x `replays` replays. As the protocol times (runner/protocol.py): before each
    profiled burst, `warm_ms` of unprofiled replays bring the GPU to the clock a busy GPU
    holds (a burst after idle runs at the boost clock), and the rounds take the bodies in
    rotated order, so clock and temperature drift hit all alike."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    graphs = {name: capture_graph(body) for name, body in bodies.items()}
    warm = {name: warm_replays(_replay_ms(g), warm_ms) for name, g in graphs.items()}
    runs: dict[str, list] = {name: [] for name in graphs}
    for r in range(rounds):
        for name in rotated(list(graphs), r):
            for _ in range(warm[name]):
                graphs[name].replay()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(replays):
                    graphs[name].replay()
                torch.cuda.synchronize()
            # times are relative to each profiling session: split each burst on its own
            runs[name] += split_replays([(e.name, e.time_range.start, e.time_range.end)
                                         for e in prof.events()
                                         if e.device_type == DeviceType.CUDA], replays)
    return {name: per_replay(r) for name, r in runs.items()}


def group_table(profiles: dict[str, GraphProfile]) -> str:
    """Markdown: per group, kernels and us per replay of each profile, and the difference of
    each profile from the first."""
    names = list(profiles)
    groups = [g for g, _ in GROUPS] + ["other", "gaps"]
    tables = {name: p.by_group() for name, p in profiles.items()}
    groups = [g for g in groups if any(g in t for t in tables.values())]
    head = "| group | " + " | ".join(f"{n} kernels | {n} us" for n in names)
    head += "".join(f" | {n} - {names[0]} us" for n in names[1:]) + " |"
    lines = [head, "|---|" + "---:|" * (2 * len(names) + len(names) - 1)]
    rows = [(g, [tables[n].get(g, (0, 0.0)) for n in names]) for g in groups]
    rows.append(("span (one replay)", [(len(profiles[n].kernels), profiles[n].span_us)
                                       for n in names]))
    for group, cells in rows:
        line = f"| {group} | " + " | ".join(f"{k} | {us:.1f}" for k, us in cells)
        line += "".join(f" | {us - cells[0][1]:+.1f}" for _, us in cells[1:])
        lines.append(line + " |")
    return "\n".join(lines) + "\n"


def kernel_table(profile: GraphProfile) -> str:
    """Markdown: every kernel of one replay in order, with its group and median us."""
    lines = ["| # | kernel | group | us |", "|---:|---|---|---:|"]
    lines += [f"| {k.position} | `{short_name(k.name)}` | {k.group} | {k.us:.1f} |"
              for k in profile.kernels]
    lines.append(f"| | idle between kernels | gaps | {profile.gaps_us:.1f} |")
    return "\n".join(lines) + "\n"


def as_json(profile: GraphProfile) -> dict:
    return {"replays": profile.replays, "span_us": profile.span_us, "busy_us": profile.busy_us,
            "kernels": [{"position": k.position, "name": k.name, "group": k.group, "us": k.us}
                        for k in profile.kernels]}
