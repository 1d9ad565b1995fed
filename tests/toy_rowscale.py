"""A third kernel, defined entirely here, as a plugin author would write one: an op (rowscale:
Y = X * s[:, None], then ReLU when the `relu` flag is set), a TIRx template with three knobs and
its search space. It touches no file of the package: tests/test_toy_kernel.py registers it
through an entry point of its own."""

from __future__ import annotations

import re
from pathlib import Path

from autotune.ops import BucketRule, Op, dtype_name
from autotune.spaces.base import CategoricalKnobs, Problem, SearchSpace


class RowScale(Op):
    name = "rowscale"
    fields = {"rows": int, "cols": int, "relu": bool}
    bucket = BucketRule(same=("cols", "relu"), pow2=("rows",))
    schema = "(Tensor x, Tensor s, bool relu=False) -> Tensor"

    def parse(self, text, dtype="float32"):
        m = re.fullmatch(r"(\d+)x(\d+)(\+relu)?", text.strip())
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise ValueError(f"rowscale shape {text!r} is not ROWSxCOLS[+relu], e.g. 256x1024")
        rows, cols = int(m.group(1)), int(m.group(2))
        if cols % 64:
            raise ValueError(f"rowscale {text}: cols={cols} is not a multiple of 64")
        return self.problem(dtype, rows=rows, cols=cols, relu=bool(m.group(3)))

    def flops(self, problem):
        return float(problem["rows"] * problem["cols"])

    def bytes_moved(self, problem):
        return 4.0 * problem["rows"] * (2 * problem["cols"] + 1)

    def make_inputs(self, problem, seed, device="cuda"):
        import torch

        gen = torch.Generator(device=device).manual_seed(seed)
        rows, cols = problem["rows"], problem["cols"]
        x = torch.randn(rows, cols, generator=gen, device=device)
        s = torch.randn(rows, generator=gen, device=device)
        return [x, s, torch.empty(rows, cols, device=device)]

    def output_indices(self, problem):
        return [2]

    def reference(self, problem, inputs):
        x, s, _ = inputs
        y = x * s[:, None]
        return [y.clamp_min(0) if problem["relu"] else y]

    def vendor(self, problem, inputs):
        x, s, y = inputs
        return lambda: y.copy_(self.reference(problem, inputs)[0])

    def call_problem(self, args):
        x, s, *flag = args
        if len(x.shape) != 2 or tuple(s.shape) != (x.shape[0],):
            raise ValueError(f"rowscale: x {tuple(x.shape)} and s {tuple(s.shape)} are not "
                             "(rows, cols) and (rows,)")
        return self.problem(dtype_name(x.dtype), rows=x.shape[0], cols=x.shape[1],
                            relu=bool(flag and flag[0]))

    def launcher(self, args, problem, kernel):
        def launch(args, out):
            x, s = args[0].contiguous(), args[1].contiguous()
            y = x.new_empty(x.shape) if out is None else out
            kernel(x, s, y, check=False)
            return y

        return launch

    def vendor_launcher(self, args, problem):
        def launch(args, out):
            y = args[0] * args[1][:, None]
            return y.clamp_min(0) if problem["relu"] else y

        return launch

    def fake(self, x, s, relu=False):
        return x.new_empty(x.shape)


ROWSCALE = RowScale()


def rowscale_kernel(rows: int, cols: int, relu: bool, rows_per_cta: int, threads: int,
                    unroll: bool, dtype: str = "float32"):
    """One CTA per `rows_per_cta` rows; each thread scales every `threads`-th element."""
    from tvm.script import tirx as T

    loop = T.unroll if unroll else T.serial

    @T.prim_func
    def kernel(X: T.Buffer((rows, cols), dtype), S: T.Buffer((rows,), dtype),
               Y: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        bx = T.cta_id([rows // rows_per_cta])
        tid = T.thread_id([threads])
        for r in range(rows_per_cta):
            for j in loop(cols // threads):
                i = T.meta_var(bx * rows_per_cta + r)
                c = T.meta_var(j * threads + tid)
                if relu:
                    Y[i, c] = T.max(X[i, c] * S[i], T.Cast(dtype, 0))
                else:
                    Y[i, c] = X[i, c] * S[i]

    return kernel


class RowScaleSm90Space(CategoricalKnobs, SearchSpace):
    name = "toy_rowscale"
    arch = "sm_90a"
    op = ROWSCALE
    default_shapes = ("256x1024", "256x1024+relu")

    def knob_values(self, problem):
        return {"rows_per_cta": (1, 2, 4, 8), "threads": (64, 128, 256), "unroll": (False, True)}

    def violations(self, config, problem):
        out = self.knob_violations(config, problem)
        if out:
            return out
        if problem["rows"] % config["rows_per_cta"]:
            out.append(f"rows_per_cta={config['rows_per_cta']} does not divide rows={problem['rows']}")
        if problem["cols"] % config["threads"]:
            out.append(f"threads={config['threads']} does not divide cols={problem['cols']}")
        return out

    def default_config(self, problem):
        return {"rows_per_cta": 1, "threads": 64, "unroll": False}  # legal for every shape

    def parse_problem(self, text, dtype="float32"):
        return self.op.parse(text, dtype)

    def build(self, config, problem):
        return rowscale_kernel(problem["rows"], problem["cols"], problem["relu"],
                               dtype=problem.dtype, **config)

    def template_files(self):
        return [str(Path(__file__).resolve())]
