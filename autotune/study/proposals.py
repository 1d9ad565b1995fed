"""Legal proposals for a study, drawn by its sampler from an in-memory shadow of it.

Most of a kernel's knob product can be illegal (gemm_sm90: 80-90%, by shape). Storing each
illegal draw in the persistent study took over a dozen writes, and every later draw read it
back: the sampler, not the GPU, was the bottleneck. So the sampler runs on a shadow study in
Optuna's InMemoryStorage that mirrors the real study's trials (finished ones, and running ones:
constant liar sees other drivers' trials in flight). A draw that breaks a legality rule is told
PRUNED in the shadow only, where the sampler learns from it as before, at no storage cost.

A legal draw becomes a trial of the real study through that study's own sampler, which hands
the draw over (it draws nothing itself). Trials waiting in the real study's queue (the default
config, configs a user enqueued, trials re-queued after a dead driver) go first, as Optuna's ask
pops them; they are not checked here: the driver checks every trial it gets. Drivers sharing a
storage share that queue, and only that: no draw of one can go to another."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from ..spaces.base import Config

# Illegal draws in a row before giving up: far more than a sampler that can reach legal configs
# needs, few enough to end soon a study whose sampler cannot (gemm_sm90, TPE: ~20 s).
REFUSED_PER_PROPOSAL = 2000


class _Handover(optuna.samplers.BaseSampler):
    """The real study's sampler: a new trial takes the config `hand_over()` gives."""

    def __init__(self, hand_over: Callable[[], Config]) -> None:
        self.hand_over, self.config = hand_over, None

    def before_trial(self, study, trial) -> None:
        self.config = None

    def infer_relative_search_space(self, study, trial) -> dict:
        return {}

    def sample_relative(self, study, trial, search_space) -> dict:
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        if self.config is None:
            self.config = self.hand_over()
        return self.config[param_name]


class Proposals:
    """The proposals of one study; `violations(config)` lists the rules a config breaks. The
    study's own sampler is replaced by the hand-over of `sampler`'s draws on the shadow."""

    def __init__(self, study: optuna.Study, sampler: optuna.samplers.BaseSampler | None,
                 distributions: Mapping[str, BaseDistribution],
                 violations: Callable[[Config], list[str]]):
        self.study, self.distributions, self.violations = study, dict(distributions), violations
        self.shadow = optuna.create_study(storage=optuna.storages.InMemoryStorage(),
                                          sampler=sampler, direction=study.direction)
        study.sampler = _Handover(self._hand_over)
        self._study_id = study._storage.get_study_id_from_name(study.study_name)
        self._shadow_of: dict[int, int] = {}  # real trial number -> its shadow's number
        self._running: set[int] = set()  # real trials mirrored while running
        self._next: optuna.Trial | None = None  # a legal draw, not yet a real trial
        self._taken: optuna.Trial | None = None  # the draw the last ask handed over
        self.refused = 0  # illegal draws, told to the shadow only
        self.stopped: str | None = None  # why the sampler draws no more

    def ask(self) -> optuna.Trial | None:
        """A running trial of the real study: a queued one, else the sampler's next legal draw;
        None once the sampler has stopped (`stopped` says why) and nothing is queued."""
        if not self._refresh():
            draw = self._next or self._legal_draw()
            self._next = None
            return None if draw is None else self._create(draw)
        self._taken = None
        trial = self.study.ask(self.distributions)
        if self._taken is not None and trial.params == self._taken.params:
            self._shadow_of[trial.number] = self._taken.number
            self._running.add(trial.number)
        elif self._taken is not None:  # a queued trial fixing some parameters took the rest
            self._next = self._taken
        return trial

    def _create(self, draw: optuna.Trial) -> optuna.Trial:
        """The draw as a running trial of the real study, written at once with its params (an
        ask through the study's sampler writes each param in a transaction of its own)."""
        template = FrozenTrial(
            number=-1, trial_id=-1, state=TrialState.RUNNING, value=None,
            datetime_start=datetime.datetime.now(), datetime_complete=None,
            params=draw.params, distributions={k: self.distributions[k] for k in draw.params},
            user_attrs={}, system_attrs={}, intermediate_values={})
        trial = optuna.Trial(self.study, self.study._storage.create_new_trial(
            self._study_id, template_trial=template))
        self._shadow_of[trial.number] = draw.number
        self._running.add(trial.number)
        return trial

    def _hand_over(self) -> Config:
        """The config of a new real trial: the next legal draw (drawn now if the queue was
        emptied by another driver since this one looked)."""
        draw = self._next or self._legal_draw()
        if draw is None:  # that race, and the sampler stopped: the driver checks what it gets
            return self.shadow.get_trials(deepcopy=False)[-1].params
        self._next, self._taken = None, draw
        return draw.params

    def _legal_draw(self) -> optuna.Trial | None:
        for _ in range(REFUSED_PER_PROPOSAL):
            if self.stopped:
                return None
            draw = self.shadow.ask(self.distributions)
            reasons = self.violations(draw.params)
            if not reasons:
                return draw
            self.refused += 1
            self._tell_shadow(draw.number, TrialState.PRUNED)
        self.stopped = self.stopped or (f"the sampler proposed {REFUSED_PER_PROPOSAL} illegal "
                                        f"configs in a row (the last: {'; '.join(reasons)})")
        return None

    def _refresh(self) -> bool:
        """Mirror the real study's trials not yet in the shadow, and the ends of running ones;
        True if some wait in its queue."""
        queued = False
        for t in self.study.get_trials(deepcopy=False):  # new and unfinished rows are read
            if t.state == TrialState.WAITING:
                queued = True
            elif t.number in self._running:
                if t.state.is_finished():
                    self._running.remove(t.number)
                    self._tell_shadow(self._shadow_of[t.number], t.state, t.value)
            elif t.number not in self._shadow_of and self.distributions.keys() <= t.params.keys():
                self._shadow_of[t.number] = self._mirror(t)
                if t.state == TrialState.RUNNING:
                    self._running.add(t.number)
        return queued

    def _mirror(self, t: FrozenTrial) -> int:
        self.shadow.add_trial(optuna.trial.create_trial(
            state=t.state, value=t.value if t.state == TrialState.COMPLETE else None,
            params=t.params, distributions=t.distributions))
        return self.shadow.get_trials(deepcopy=False)[-1].number

    def _tell_shadow(self, number: int, state: TrialState, value: float | None = None) -> None:
        try:
            self.shadow.tell(number, value if state == TrialState.COMPLETE else None, state=state)
        except RuntimeError as exc:
            # BruteForceSampler stops the study once it has drawn every config; the trial is told.
            if "stop" not in str(exc):
                raise
            self.stopped = "the sampler has proposed every config of the space"
