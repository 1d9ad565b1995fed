"""Plant a bug in a kernel template: load a copy of its TVMScript module with one source line
changed, so a test can check that NumSim catches what the change breaks.

The copy is written to a file (TVMScript parses kernels from their source file) and loaded under
its own name; the test swaps its `make_kernel` in for the real one with monkeypatch."""

from __future__ import annotations

import importlib.util
import inspect
import sys


def planted(module, old: str, new: str, tmp_path):
    """A loaded copy of `module` whose one occurrence of `old` reads `new`."""
    source = inspect.getsource(module)
    assert source.count(old) == 1, f"{old!r} is not exactly once in {module.__name__}"
    name = module.__name__.rsplit(".", 1)[-1] + "_planted"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new))
    spec = importlib.util.spec_from_file_location(name, path)
    copy = importlib.util.module_from_spec(spec)
    sys.modules[name] = copy
    spec.loader.exec_module(copy)
    return copy
