"""Restamping a store (autotune/store/restamp.py): a store measured under an earlier template
takes this template's hash only if every entry builds the same kernel under both."""

import dataclasses
import subprocess
from pathlib import Path

import pytest

from autotune.errors import UserError
from autotune.spaces import get_space
from autotune.store import ConfigStore, template_hash
from autotune.store.restamp import digests_at, kernel_digests, restamp

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "studies" / "configs" / "gemm_sm90" / "nvidia-h100-80gb-hbm3.json"


@pytest.fixture(scope="module")
def small():
    """Two entries of the committed H100 GEMM store, under an older template's hash."""
    store = ConfigStore.read(STORE)
    keys = sorted(store.entries)[:2]
    return dataclasses.replace(store, header=dataclasses.replace(store.header, template="0ld"),
                               entries={k: store.entries[k] for k in keys})


def test_equal_kernels_take_this_templates_hash(small):
    space = get_space("gemm_sm90")
    stamped = restamp(small, space, kernel_digests(space, small))
    assert stamped.header.template == template_hash(space) != small.header.template
    assert stamped.entries == small.entries


def test_a_changed_kernel_is_named_and_nothing_is_restamped(small):
    space = get_space("gemm_sm90")
    before = kernel_digests(space, small)
    changed = sorted(before)[1]
    before[changed] = "another kernel"
    with pytest.raises(UserError, match=rf"1 of 2 entries build another kernel.*{changed}"):
        restamp(small, space, before)
    assert small.header.template == "0ld"


def _worktrees():
    return subprocess.run(["git", "-C", str(ROOT), "worktree", "list", "--porcelain"],
                          capture_output=True, text=True, check=True).stdout


def test_an_earlier_revision_is_built_in_its_own_worktree(small, tmp_path):
    path = small.write(tmp_path / "store.json")
    trees = _worktrees()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    before = digests_at(head, path, repo=ROOT)
    # HEAD's GEMM template is this checkout's unless the test runs on uncommitted kernel edits
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "kernels/gemm"],
                           capture_output=True, text=True, check=True).stdout
    if not dirty:
        assert before == kernel_digests(get_space("gemm_sm90"), small)
    assert set(before) == set(small.entries)
    assert _worktrees() == trees  # the temporary one is gone
    with pytest.raises(UserError, match="cannot check out revision 'no-such-revision'"):
        digests_at("no-such-revision", path, repo=ROOT)


# The last commit before the GEMM space had its `schedule` knob (session 24).
BEFORE_PINGPONG = "25ae38c"


def test_a_revision_without_a_knob_builds_the_entries_at_its_earlier_value(small, tmp_path):
    space = get_space("gemm_sm90")
    key = sorted(small.entries)[0]
    entry = small.entries[key]
    assert entry.config["schedule"] == "cooperative"  # the committed store names the knob
    path = small.write(tmp_path / "store.json")
    before = digests_at(BEFORE_PINGPONG, path, repo=ROOT)
    assert before == kernel_digests(space, small)
    # set, the knob builds another kernel here: restamping names the entry
    turned = dataclasses.replace(small, entries={**small.entries, key: dataclasses.replace(
        entry, config={**entry.config, "schedule": "pingpong", "consumers": 2,
                       "persistent": True})})
    with pytest.raises(UserError, match=rf"1 of 2 entries build another kernel.*{key}"):
        restamp(turned, space, before)
