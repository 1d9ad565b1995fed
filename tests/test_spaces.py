"""The plugin registry and the conformance kit, run against the synthetic space."""

import importlib.metadata

import pytest

from autotune.spaces import PluginLoadError, UnknownSpace, discover, get_space
from autotune.spaces import registry
from autotune.testing import SpaceConformance
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile


class TestSyntheticConformance(SpaceConformance):
    space = SyntheticSpace()
    registered = False  # a test fixture, not a shipped plugin
    compiler = staticmethod(stub_compile)
    evaluator = SyntheticEvaluator()


class _NoDefaultShapes(SyntheticSpace):
    default_shapes = ()


class _IllegalDefault(SyntheticSpace):
    def default_config(self, problem):
        return {"block_m": 128, "block_n": 128, "stages": 4}  # over the shared-memory budget


class _WrongKernel(SyntheticSpace):
    def fault(self, config):
        return "wrong"


def _run_kit(space_class, test_name, **attrs):
    kit = type("Kit", (SpaceConformance,), {"space": space_class(), "registered": False,
                                             "compiler": staticmethod(stub_compile),
                                             "evaluator": SyntheticEvaluator(), **attrs})()
    getattr(kit, test_name)()


@pytest.mark.parametrize("space_class, test_name", [
    (_NoDefaultShapes, "test_default_shapes_parse"),
    (_IllegalDefault, "test_default_config_is_legal_and_in_space"),
    (_WrongKernel, "test_default_config_validates"),
])
def test_kit_catches_broken_plugins(space_class, test_name):
    with pytest.raises(AssertionError):
        _run_kit(space_class, test_name)


def test_kit_requires_registration():
    with pytest.raises(AssertionError, match="not in the 'autotune.spaces'"):
        _run_kit(SyntheticSpace, "test_registered", registered=True)


def _fake_entry_points(monkeypatch, **targets):
    eps = [importlib.metadata.EntryPoint(name, value, registry.ENTRY_POINT_GROUP)
           for name, value in targets.items()]
    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [ep for ep in eps if ep.group == group])


def test_registry_loads_plugins_and_reports_broken_ones(monkeypatch):
    _fake_entry_points(monkeypatch, synthetic="autotune.testing.synthetic:SyntheticSpace",
                       broken="autotune.spaces.does_not_exist:Space",
                       notaspace="autotune.errors:UserError")
    plugins = discover()
    assert plugins["synthetic"].space_class is SyntheticSpace
    assert "ModuleNotFoundError" in plugins["broken"].error
    assert "not a subclass" in plugins["notaspace"].error
    assert isinstance(get_space("synthetic"), SyntheticSpace)
    with pytest.raises(PluginLoadError, match="broken"):
        get_space("broken")
    with pytest.raises(UnknownSpace, match="registered: broken, notaspace, synthetic"):
        get_space("nope")


def test_get_space_by_module_path():
    assert isinstance(get_space("autotune.testing.synthetic:SyntheticSpace"), SyntheticSpace)
    with pytest.raises(PluginLoadError):
        get_space("autotune.testing.synthetic:Nope")


def test_builtin_plugins_are_registered():
    # The shipped GEMM spaces are entry points of the installed package (loaded or not).
    assert {"gemm_sm90", "gemm_sm100"} <= set(discover())


def test_a_late_knob_at_its_earlier_value_is_no_other_spaces_knob_value():
    # config ids leave LATE_KNOBS at their earlier values out, whatever the space: a shipped
    # space that took such a value would have two of its configs share an id
    from autotune.store.format import LATE_KNOBS

    for name in discover():
        space = get_space(name)
        problem = space.default_problems()[0]
        knobs = space.parameters(problem)
        owner = set(LATE_KNOBS) <= set(getattr(space, "added_knobs", {}))
        for knob, value in LATE_KNOBS.items():
            if knob in knobs and not owner:
                assert value not in knobs[knob].choices, (name, knob)
    # each is a knob gemm_sm90 gained after its stores, at the value they were measured at
    assert LATE_KNOBS.items() <= get_space("gemm_sm90").added_knobs.items()
    assert set(LATE_KNOBS) == {"schedule", "multicast", "epi_tail"}
