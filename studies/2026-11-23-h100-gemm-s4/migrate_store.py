"""Carry the committed H100 store over to the template with the stream_k knob.

Every stored config gets stream_k=False (its `measured` times re-keyed to the new config ids)
and the header the new template hash - but only if each entry's kernel is the same TVMScript
text (the compile cache's key: equal text, equal binary) under the old template (read from git
at OLD_REF) and the new one. `measured` is re-keyed for the configs the store's studies timed
(their trials.csv files), the entry's own, its default and its seeds. Usage (repository root):
    python studies/2026-11-23-h100-gemm-s4/migrate_store.py OLD_REF STORE TRIALS.csv...
"""

import dataclasses
import hashlib
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from autotune.dispatch import loso
from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config
from autotune.store import template_hash
from autotune.store.format import ConfigStore, config_id

FILES = ("sm90.py", "_sm90_config.py", "_sm90_wgmma.py")


def script_hashes(module, configs_of, problems):
    return [hashlib.sha256(module.build_gemm(*p, cfg).script().encode()).hexdigest()
            for p, cfg in zip(problems, configs_of)]


def main(old_ref: str, store: str, *trials: str) -> None:
    data = json.loads(Path(store).read_text())
    problems = []
    for e in data["entries"]:
        kv = dict(x.split("=") for x in e["problem"].split(","))
        problems.append((int(kv["M"]), int(kv["N"]), int(kv["K"]), kv["dtype"]))
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "old_gemm"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        for f in FILES:
            (pkg / f).write_text(subprocess.run(
                ["git", "show", f"{old_ref}:kernels/gemm/{f}"], check=True, capture_output=True,
                text=True).stdout)
        sys.path.insert(0, tmp)
        old = importlib.import_module("old_gemm.sm90")
        old_cfgs = [old.GemmConfig.from_dict(kernel_config(e["config"]).as_dict())
                    for e in data["entries"]]
        before = script_hashes(old, old_cfgs, problems)
    new = importlib.import_module("kernels.gemm.sm90")
    after = script_hashes(new, [kernel_config({**e["config"], "stream_k": False})
                                for e in data["entries"]], problems)
    differ = [e["problem"] for e, a, b in zip(data["entries"], before, after) if a != b]
    if differ:
        sys.exit(f"kernels differ under the new template, not migrated: {differ}")
    space = GemmSm90Space()
    timed = {}
    for path in trials:
        for key, times in loso.trial_times(Path(path)).items():
            timed.setdefault(key, {}).update(times)
    store_obj = ConfigStore.read(store)
    for key, e in store_obj.entries.items():
        problem = e.parsed_problem
        # the ids of the configs the evidence rules look up: the entry's, its default, its seeds
        known = [e.config, space.default_config(problem), *space.seed_configs(problem),
                 *(c for _, c in timed.get(key, {}).values())]
        ids = {config_id({k: v for k, v in c.items() if k != "stream_k"}):
               config_id({**c, "stream_k": c.get("stream_k", False)}) for c in known}
        measured = e.measured and {ids.get(k, k): v for k, v in e.measured.items()}
        store_obj.entries[key] = dataclasses.replace(
            e, config={**e.config, "stream_k": False}, measured=measured)
    store_obj.header = dataclasses.replace(store_obj.header, template=template_hash(space))
    store_obj.write(store)
    data["header"]["template"] = store_obj.header.template
    print(f"{len(data['entries'])} entries: equal kernels under both templates; "
          f"template {data['header']['template']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
