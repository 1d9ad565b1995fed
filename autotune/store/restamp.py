"""Carry a store over to a changed template when the change leaves its kernels alone (a new
legality rule, a comment, a refactor): each entry's kernel is built under the template at an
earlier git revision and under this checkout's, and the header takes the new template hash only
if every pair is the same TVMScript text - the compile cache's identity: equal text, equal
binary, so the stored times still hold. Otherwise nothing is written and the entries whose
kernels changed are named: they must be measured again."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import UserError
from .compat import template_hash
from .format import ConfigStore

# Run inside the earlier revision's tree, with its own autotune and kernels: only APIs every
# revision since the house reshaping has (get_space, ConfigStore.read, parameters,
# build().script()). Knobs that revision lacks are left out of each config: it builds them at
# the value they had before (a config that sets one otherwise builds another kernel here and
# is named as changed).
_DIGESTS = """
import hashlib, json, sys
from autotune.spaces import get_space
from autotune.store import ConfigStore
space, store = get_space(sys.argv[1]), ConfigStore.read(sys.argv[2])
def known(e):
    names = set(space.parameters(e.parsed_problem))
    return {k: v for k, v in e.config.items() if k in names}
print(json.dumps({key: hashlib.sha256(space.build(known(e), e.parsed_problem).script().encode())
                  .hexdigest() for key, e in store.entries.items()}))
"""


def kernel_digests(space, store: ConfigStore) -> dict[str, str]:
    """Problem key -> sha256 of its entry's kernel as TVMScript, under this checkout's template."""
    return {key: hashlib.sha256(space.build(e.config, e.parsed_problem).script().encode())
            .hexdigest() for key, e in store.entries.items()}


def digests_at(revision: str, store_file: str | Path, repo: str | Path | None = None
               ) -> dict[str, str]:
    """kernel_digests of `store_file`'s entries under the template at git `revision` of `repo`
    (default: the repository holding the store file), computed in a temporary worktree."""
    store_file = Path(store_file).resolve()
    space = ConfigStore.read(store_file).header.space
    top = subprocess.run(["git", "-C", str(repo or store_file.parent), "rev-parse",
                          "--show-toplevel"], capture_output=True, text=True)
    if top.returncode:
        raise UserError(f"{repo or store_file} is not in a git repository: no earlier template "
                        "to read")
    repo = top.stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        added = subprocess.run(["git", "-C", repo, "worktree", "add", "--detach", str(tree),
                                revision], capture_output=True, text=True)
        if added.returncode:
            raise UserError(f"cannot check out revision {revision!r}: {added.stderr.strip()}")
        try:
            run = subprocess.run([sys.executable, "-c", _DIGESTS, space, str(store_file)],
                                 cwd=tree, capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": str(tree)})
        finally:
            subprocess.run(["git", "-C", repo, "worktree", "remove", "--force", str(tree)],
                           capture_output=True)
    if run.returncode:
        raise UserError(f"the template at {revision} cannot build this store's kernels: "
                        f"{run.stderr.strip().splitlines()[-1:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def restamp(store: ConfigStore, space, before: dict[str, str]) -> ConfigStore:
    """`store` with this checkout's template hash, if each entry's kernel digest equals
    `before`'s (the earlier template's); a UserError naming the entries that differ otherwise.
    Knobs the space gained since (`added_knobs`) are written into each entry at their earlier
    values: the same kernels, now named as the space names them."""
    store = dataclasses.replace(store, entries={
        key: dataclasses.replace(e, config=space.with_added_knobs(e.config))
        for key, e in store.entries.items()})
    after = kernel_digests(space, store)
    changed = sorted(key for key in store.entries if before.get(key) != after[key])
    if changed:
        raise UserError(f"{len(changed)} of {len(store.entries)} entries build another kernel "
                        f"under this template, not restamped (measure them again): {changed}")
    return dataclasses.replace(store, header=dataclasses.replace(store.header,
                                                                 template=template_hash(space)))
