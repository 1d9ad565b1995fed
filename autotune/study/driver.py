"""The tuning driver: Optuna ask/tell in one process, candidates evaluated by a Runner.

Per problem (shape), one Optuna study. The hand-tuned default is enqueued first, then the
space's seed configs (neighbours of the default worth measuring early). The sampler
draws from an in-memory shadow of the study (proposals.py): illegal configs (a sampler over
independent knobs proposes many) are told PRUNED there only, counted ("illegal" outcomes) but
neither stored nor counted toward the trial budget, which is of legal configs tried; only legal
configs become trials of the study. A config already finished in the study is served from it,
and one already in flight waits for that measurement; a config that would become the best so
far is timed a second time before it is told. When the budget is spent, a final round times the
fastest few configs and the default again, side by side (final.py); its winner is the study's
pick. Every trial's outcome is in its user attrs
("outcome", "cause", "message", timing, resources). Studies written before the shadow may hold
illegal trials, PRUNED with outcome "illegal"; so may a trial from the queue (say, a config a
user enqueued) that breaks a rule."""

from __future__ import annotations

import collections
import dataclasses
import math
import sys
import time
import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..errors import UserError
from ..runner.base import PROTOCOL, Candidate, Provenance, Result, Runner
from ..spaces.base import Config, Problem, SearchSpace
from .final import FINAL_ATTR, FINAL_ROUNDS, chosen, is_current, run_final
from .fixed import check_fixed
from .proposals import Proposals
from .storage import open_storage

OK, COMPILED, VALIDATED, ILLEGAL = "ok", "compiled", "validated", "illegal"
NOT_FIXED = "not_fixed"  # a queued trial that does not match this session's fixed parameters
OVER_BUDGET = "over_budget"  # another driver on the study spent the budget first
UNCOUNTED = (ILLEGAL, NOT_FIXED, OVER_BUDGET)
# Proposals of configs already measured, in a row, before a study stops: its sampler has little
# left to propose (e.g. a budget larger than the legal space), and duplicates cost no budget.
DUPLICATES_IN_A_ROW = 100
MEASURED = Provenance("measured")
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def study_name(space: SearchSpace, problem: Problem,
               provenance: Provenance = MEASURED) -> str:
    # Compile-only or replayed trials are no measurements: keep them out of the study that
    # holds a device's times.
    return f"{space.name}/{problem.key}{provenance.study_suffix}"


@dataclasses.dataclass
class StudySummary:
    problem: Problem
    study: optuna.Study
    finished: int  # trials that count finished in the study (every driver, every session)
    measured: int  # candidates this session sent to the runner (retimes excluded)
    outcomes: collections.Counter  # this session's trials by outcome, illegal proposals too
    best: FrozenTrial | None  # the study's pick: the final round's winner, if it ran
    best_time_ms: float | None = None  # its time: the final round's median, or the trial's
    default_time_ms: float | None = None
    stopped: str | None = None  # why the sampler proposed no more configs, if it stopped
    final: dict | None = None  # the final round's outcome (final.py), if one is current
    vendor_ms: float | None = None  # the vendor op's time in that final round


@dataclasses.dataclass
class _Served:
    """A finished trial's result, as served to a duplicate suggestion."""

    number: int
    state: TrialState
    value: float | None
    attrs: dict[str, Any]


def counts(t: FrozenTrial) -> bool:
    """Whether a trial spends the study's budget, which is of configs measured: running (on any
    driver), or finished with a result of its own. Not: illegal, duplicate, over-budget, queued,
    or failed by a dead driver's heartbeat (it has no outcome; it was re-queued)."""
    attrs = t.user_attrs
    if "duplicate_of" in attrs or attrs.get("outcome") in UNCOUNTED:
        return False
    if t.state == TrialState.RUNNING:
        return True
    return t.state.is_finished() and "outcome" in attrs


def budget_spent(trials: list[FrozenTrial]) -> int:
    """The budget counting `trials` spend: their distinct configs. Two drivers may measure one
    config at once; the later trial ends as the earlier's duplicate, so while both run they
    hold one config's budget, not two (counting two let a later config be refused as over
    budget, and the study lost it)."""
    return len({_key(t.params) for t in trials})


def _key(params: Config) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class _ProblemDriver:
    def __init__(self, space: SearchSpace, problem: Problem, study: optuna.Study,
                 sampler: optuna.samplers.BaseSampler | None, runner: Runner, trials: int,
                 retime_best: bool, progress: bool, fixed: Config | None = None,
                 final_top: int = 0, final_rounds: int = 0):
        self.fixed = dict(fixed or {})
        self.final_top, self.final_rounds = final_top, final_rounds
        self.space, self.problem, self.study, self.runner = space, problem, study, runner
        self.trials, self.retime_best = trials, retime_best
        self.distributions = dict(space.parameters(problem))
        self.proposals = Proposals(study, sampler, self.distributions,
                                   lambda config: space.violations(config, problem))
        self.flops = space.flops(problem)
        storage = study._storage  # optuna wraps an RDB storage in its cached storage
        interval = getattr(storage, "get_heartbeat_interval", lambda: None)()
        self._heartbeat = storage.record_heartbeat if interval else None
        self._beat_s, self._next_beat = interval or 0, 0.0
        self._grace_s = getattr(getattr(storage, "_backend", storage), "grace_period", None) or 60
        self._next_stale_check = time.monotonic() + self._grace_s
        self._adopted: set[int] = set()  # other drivers' running trials given one heartbeat
        self.served: dict[tuple, _Served] = {}
        self.running: dict[int, optuna.Trial] = {}  # trial number -> trial, sent to the runner
        self.in_flight: dict[tuple, int] = {}  # config key -> trial number measuring it
        self.followers: dict[int, list[optuna.Trial]] = collections.defaultdict(list)
        self.first_timing: dict[int, Result] = {}  # trials being re-timed
        self.open = 0  # asked, not yet told
        self.measured = 0
        self.outcomes: collections.Counter = collections.Counter()
        self.best_ms = math.inf
        self.duplicates_in_a_row, self.stopped = 0, None
        # The study's trials as last read, and the trials told since that no longer count: a
        # read loads every running trial back from the storage, so one serves a whole step.
        self._snapshot: list[FrozenTrial] | None = None
        self._told_uncounted: set[int] = set()
        self._load_finished()
        self.bar = None
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=trials, initial=min(self.finished(), trials), unit="trial",
                            desc=f"{space.name} {problem.key}", file=sys.stderr, dynamic_ncols=True)

    # -- state from the study ----------------------------------------------------------------
    def _load_finished(self) -> None:
        for t in self.study.get_trials(deepcopy=False, states=_FINISHED):
            if counts(t):
                self.served.setdefault(_key(t.params),
                                       _Served(t.number, t.state, t.value, t.user_attrs))
                if t.state == TrialState.COMPLETE:
                    self.best_ms = min(self.best_ms, t.value)

    def finished(self) -> int:
        """Finished trials that count, by every driver of the study."""
        return sum(counts(t) and t.state.is_finished()
                   for t in self.study.get_trials(deepcopy=False))

    def _counting(self) -> list[FrozenTrial]:
        """Trials that count, running or finished, by every driver of the study: from the
        step's read (made now if this step has none)."""
        if self._snapshot is None:
            self._snapshot, self._told_uncounted = self.study.get_trials(deepcopy=False), set()
        return [t for t in self._snapshot if counts(t) and t.number not in self._told_uncounted]

    def _enqueue_start(self) -> None:
        """The default, then the space's seed configs best bets first, once per study (a
        resumed study has them); with fixed parameters, those configs with the fixed values,
        once per fix."""
        trials = self.study.get_trials(deepcopy=False)
        if not self.fixed and any(t.user_attrs.get("source") == "default" for t in trials):
            return
        default = {**self.space.default_config(self.problem), **self.fixed}
        self.study.enqueue_trial(default, user_attrs={"source": "default"}, skip_if_exists=True)
        for seed in self.space.ranked_seed_configs(self.problem):
            seed = {**seed, **self.fixed}
            if seed != default and not self.space.violations(seed, self.problem):
                self.study.enqueue_trial(seed, user_attrs={"source": "seed"}, skip_if_exists=True)

    # -- telling -----------------------------------------------------------------------------
    def _tell(self, trial: optuna.Trial, state: TrialState, value: float | None,
              attrs: dict) -> None:
        for name, v in attrs.items():
            trial.set_user_attr(name, _json_safe(v))
        self.study.tell(trial, value if state == TrialState.COMPLETE else None, state=state)
        self.open -= 1
        outcome = attrs.get("outcome", "")
        self.outcomes[outcome] += 1
        if outcome in UNCOUNTED or "duplicate_of" in attrs:
            self._told_uncounted.add(trial.number)
            return
        if state == TrialState.COMPLETE:
            self.best_ms = min(self.best_ms, value)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(self._status(), refresh=False)

    def _status(self) -> str:
        parts = []
        if math.isfinite(self.best_ms):
            best = f"best {self.best_ms:.4g} ms"
            if self.flops:
                best += f" ({self.flops / self.best_ms / 1e9:.3g} TFLOP/s)"
            parts.append(best)
        parts += [f"{k} {self.outcomes[k]}" for k in (COMPILED, VALIDATED) if self.outcomes[k]]
        failed = {k: v for k, v in self.outcomes.items()
                  if k not in (OK, COMPILED, VALIDATED, ILLEGAL) and v}
        if failed:
            parts.append("failed: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())))
        if self.outcomes[ILLEGAL]:
            parts.append(f"illegal {self.outcomes[ILLEGAL]}")
        return " | ".join(parts)

    def _serve(self, trial: optuna.Trial, served: _Served) -> None:
        attrs = {k: v for k, v in served.attrs.items() if k != "source"}
        attrs["duplicate_of"] = served.number
        self._tell(trial, served.state, served.value, attrs)
        self.duplicates_in_a_row += 1
        if self.duplicates_in_a_row >= DUPLICATES_IN_A_ROW:
            self.stopped = (f"the sampler proposed {DUPLICATES_IN_A_ROW} measured configs in a "
                            "row (the space may hold fewer legal configs than the budget)")

    def _result_attrs(self, result: Result) -> tuple[TrialState, float | None, dict]:
        attrs: dict[str, Any] = {"runner": self.runner.mode, "resources": result.resources}
        if result.device:
            attrs["device"] = result.device
        if result.compile_s is not None:
            attrs["compile_s"] = round(result.compile_s, 3)
        if result.rel_errors:
            attrs["rel_error"] = max(result.rel_errors)
        if not result.ok:
            attrs.update(outcome=result.cause.value, cause=result.cause.value,
                         message=result.message[-2000:])
            return TrialState.FAIL, None, attrs
        if result.timing is None:  # compile-only or validated in simulation: no time
            attrs.update(outcome=VALIDATED if self.runner.provenance.kind == "validated"
                         else COMPILED)
            return TrialState.PRUNED, None, attrs
        t = result.timing
        attrs.update(outcome=OK, time_ms=t.ms, spread=t.spread,
                     timing={"min_ms": t.min_ms, "max_ms": t.max_ms, "rounds": t.rounds,
                             "iters_per_round": t.iters_per_round, "input_sets": t.input_sets})
        if self.flops:
            attrs["tflops"] = self.flops / t.ms / 1e9
        return TrialState.COMPLETE, t.ms, attrs

    def _finish(self, result: Result) -> None:
        number = result.tag
        trial = self.running[number]
        first = self.first_timing.pop(number, None)
        if first is None and self.retime_best and result.ok and result.timing is not None \
                and result.time_ms < self.best_ms:
            # A new best is re-timed first, so a lucky round does not win the study.
            self.first_timing[number] = result
            self.runner.submit(Candidate(self.space, trial.params, self.problem, tag=number))
            return
        del self.running[number]
        state, value, attrs = self._result_attrs(result)
        # Drivers sharing the study may ask at once: the trials created first hold the budget,
        # and a config another driver measured first is that one's duplicate.
        earlier = [t for t in self._counting() if t._trial_id < trial._trial_id]
        twin = next((t.number for t in earlier if t.params == trial.params), None)
        if twin is not None:
            attrs["duplicate_of"] = twin
        elif budget_spent(earlier) >= self.trials:
            state, value = TrialState.PRUNED, None
            attrs.update(outcome=OVER_BUDGET, message="the study's budget was spent by trials "
                                                      "created before this one")
        if first is not None:
            attrs["first_time_ms"] = first.time_ms
            if state == TrialState.COMPLETE:
                attrs["retime_ms"] = value
                value = max(value, first.time_ms)  # both rounds must agree it is this fast
                attrs["time_ms"] = value
                if self.flops:
                    attrs["tflops"] = self.flops / value / 1e9
        key = _key(trial.params)
        self.served[key] = _Served(number, state, value, attrs)
        del self.in_flight[key]
        self._tell(trial, state, value, attrs)
        for follower in self.followers.pop(number, []):
            self._serve(follower, self.served[key])

    # -- the loop ----------------------------------------------------------------------------
    def _ask_more(self) -> None:
        spent = budget_spent(self._counting())  # by every driver: they share one budget
        if spent >= self.trials:  # as of the step's read: other drivers' trials may have ended
            self._snapshot = None  # as duplicates since, freeing budget; decide on a fresh read
            spent = budget_spent(self._counting())
        while self.runner.in_flight < self.runner.slots and spent < self.trials \
                and not self.stopped:
            refused = self.proposals.refused
            trial = self.proposals.ask()
            if self.proposals.refused > refused:
                self.outcomes[ILLEGAL] += self.proposals.refused - refused
            if trial is None:
                break
            self._snapshot = None  # it misses this trial: the next step reads again
            self.open += 1
            if self._heartbeat:
                self._heartbeat(trial._trial_id)
            params = trial.params
            reasons = self.space.violations(params, self.problem)
            key = _key(params)
            unfixed = [f"{k}={params.get(k)!r}" for k, v in self.fixed.items()
                       if params.get(k) != v]
            if unfixed:  # queued by an earlier session with other (or no) fixed parameters
                self._tell(trial, TrialState.PRUNED, None, {
                    "outcome": NOT_FIXED, "message": f"{', '.join(unfixed)} is not the fixed "
                    f"{', '.join(f'{k}={v!r}' for k, v in self.fixed.items())}"})
            elif reasons:
                self._tell(trial, TrialState.PRUNED, None,
                           {"outcome": ILLEGAL, "cause": ILLEGAL, "message": "; ".join(reasons)})
            elif key in self.served:
                self._serve(trial, self.served[key])
            elif key in self.in_flight:  # its twin is being measured: it takes that result
                trial.set_user_attr("duplicate_of", self.in_flight[key])
                self.followers[self.in_flight[key]].append(trial)
            else:
                spent += 1
                self.duplicates_in_a_row = 0
                self.in_flight[key] = trial.number
                self.running[trial.number] = trial
                self.measured += 1
                self.runner.submit(Candidate(self.space, params, self.problem, tag=trial.number))

    def _others_running(self) -> list[FrozenTrial]:
        return [t for t in self.study.get_trials(deepcopy=False)
                if t.state == TrialState.RUNNING and counts(t)]

    def _adopt_orphans(self, running: list[FrozenTrial]) -> None:
        """A driver killed between asking a trial and its first heartbeat leaves the trial
        running with no heartbeat, and Optuna never finds such a trial stale: we waited on it
        for ever. One heartbeat from us, once per trial, lets the grace period fail and re-queue
        it if nobody beats for it; a living driver's own heartbeats keep it alive."""
        if not self._heartbeat:
            return
        for t in running:
            if t.number not in self.running and t._trial_id not in self._adopted:
                self._adopted.add(t._trial_id)
                self._heartbeat(t._trial_id)

    def _beat(self) -> None:
        """Heartbeats for this driver's trials, once per heartbeat interval (as optimize()'s
        heartbeat thread; one a step cost a storage write per trial in flight, every trial);
        and, once per grace period, fail the trials of drivers that died (their heartbeats
        stopped), which re-queues them for the living."""
        now = time.monotonic()
        if not self._heartbeat or now < self._next_beat:
            return
        self._next_beat = now + self._beat_s
        followers = [t for ts in self.followers.values() for t in ts]
        for trial in list(self.running.values()) + followers:
            self._heartbeat(trial._trial_id)
        if now > self._next_stale_check:
            optuna.storages.fail_stale_trials(self.study)
            self._next_stale_check = now + self._grace_s

    def run(self) -> StudySummary:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            # We record heartbeats ourselves, for ask/tell trials (optimize() would do it).
            warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
            optuna.storages.fail_stale_trials(self.study)
            self._enqueue_start()
            try:
                while True:
                    self._ask_more()
                    if not self.runner.in_flight:
                        others = self._others_running()
                        if not others:
                            break
                        self._adopt_orphans(others)
                        # The budget may be held by another driver's trials: wait until they
                        # end, or until their driver is found dead and they come back queued.
                        time.sleep(min(1.0, self._grace_s / 4))
                        optuna.storages.fail_stale_trials(self.study)
                        self._snapshot = None
                        continue
                    for result in self.runner.collect(timeout=1.0):
                        self._finish(result)
                    self._beat()
                self._final()
            finally:
                if self.bar is not None:
                    self.bar.close()
        pick = chosen(self.study)
        best, best_ms, default_ms = pick if pick else (None, None, None)
        final = self.study.user_attrs.get(FINAL_ATTR) if is_current(self.study) else None
        return StudySummary(self.problem, self.study, self.finished(), self.measured,
                            self.outcomes, best, best_ms, default_ms,
                            self.proposals.stopped or self.stopped, final,
                            final.get("vendor_ms") if final else None)

    def _final(self) -> None:
        """The final round, unless disabled, untimed, or current (nothing new since the last)."""
        if not (self.final_top and self.final_rounds and self.runner.timed) \
                or is_current(self.study):
            return

        def progress(done: int) -> None:
            if self.bar is not None:
                self.bar.set_postfix_str(
                    f"{self._status()} | final round {done}/{self.final_rounds}")

        run_final(self.study, self.space, self.problem, self.runner, self.final_top,
                  self.final_rounds, progress)


def open_study(space: SearchSpace, problem: Problem, storage, sampler=None,
               provenance: Provenance = MEASURED, timer: str = PROTOCOL) -> optuna.Study:
    """Create or resume the study of one problem. Its times come from one kind of runner, one
    timer (the protocol's, for studies of this version) and the same devices (or table):
    resuming it with others is refused (their times do not compare)."""
    study = optuna.create_study(storage=storage, study_name=study_name(space, problem, provenance),
                                sampler=sampler, direction="minimize", load_if_exists=True)
    where = {"kind": provenance.kind, **provenance.detail}
    if "space" not in study.user_attrs:
        # "space" goes last: a driver starting beside this one reads it as "the rest is written"
        # (read earlier, a missing timer looked like an old study's rotate and was refused).
        for name, value in {"kernel": space.kernel, "arch": space.arch,
                            "problem": problem.key, "shape": problem.values, "dtype": problem.dtype,
                            "flops": space.flops(problem), "timed": provenance.timed,
                            "timer": timer, "provenance": where, "space": space.name}.items():
            study.set_user_attr(name, value)
    stored = study.user_attrs.get("timer", "rotate")  # studies from before the choice: rotate
    if provenance.timed and stored != timer:
        raise UserError(f"study {study.study_name!r} was timed with the {stored!r} timer, these "
                        f"times come from {timer!r} and do not compare with them: tune into "
                        "another --storage")
    before = study.user_attrs.get("provenance")  # studies from before provenance: accepted
    differ = [k for k in ("devices", "sha256") if before and before.get(k) != where.get(k)]
    if differ:
        raise UserError(f"study {study.study_name!r} holds times {_where(before)}; this runner's "
                        f"come {_where(where)}: tune into another --storage")
    _check_knobs(study, space.parameters(problem))
    return study


def _check_knobs(study: optuna.Study, distributions: dict) -> None:
    """Refuse a study whose trials drew a knob from other values than the space offers now
    (the space changed since): Optuna cannot sample one parameter from two value sets."""
    for trial in study.get_trials(deepcopy=False):
        changed = [name for name, dist in trial.distributions.items()
                   if name in distributions and dist != distributions[name]]
        if changed:
            name = changed[0]
            raise UserError(
                f"study {study.study_name!r} drew knob {name!r} from "
                f"{_values(trial.distributions[name])}; the space now offers "
                f"{_values(distributions[name])} (it changed since the study began): tune into "
                "another --storage, or rerun the study there")
        if trial.distributions:
            return


def _values(dist) -> str:
    choices = getattr(dist, "choices", None)
    if choices is None:
        return repr(dist)
    text = ", ".join(map(str, choices))
    return f"[{text}]" if len(text) < 80 else f"[{text[:40]} ... {text[-30:]}] ({len(choices)})"


def _where(provenance: dict) -> str:
    if provenance.get("kind") == "replayed":
        return f"replayed from {provenance.get('table')} ({provenance.get('sha256')})"
    return f"measured on {', '.join(provenance.get('devices') or ['?'])}"


def tune_problem(space: SearchSpace, problem: Problem, runner: Runner, *, storage,
                 trials: int = 50, sampler: optuna.samplers.BaseSampler | None = None,
                 retime_best: bool = True, progress: bool = False,
                 fixed: Config | None = None, final_top: int = 3,
                 final_rounds: int = FINAL_ROUNDS) -> StudySummary:
    """Run (or resume) the study of one problem until it holds `trials` finished legal trials,
    or its sampler stops: it has proposed every config (BruteForceSampler), or
    REFUSED_PER_PROPOSAL illegal ones in a row (StudySummary.stopped says which).

    `sampler` draws on the study's in-memory shadow (proposals.py). `fixed` must match the
    sampler's fixed parameters; it overrides the default config too. Then the final round
    (final.py) times the `final_top` fastest configs and the default `final_rounds` times each
    (0 for either: none; the pick is then the fastest trial)."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, not {trials}")
    if fixed:
        check_fixed(space, [problem], fixed)
    if isinstance(storage, str):
        storage = open_storage(storage)
    study = open_study(space, problem, storage, provenance=runner.provenance,
                       timer=runner.timer)
    return _ProblemDriver(space, problem, study, sampler, runner, trials, retime_best, progress,
                          fixed, final_top, final_rounds).run()


def tune(space: SearchSpace, problems: list[Problem], runner: Runner, *, storage,
         trials: int = 50, sampler_factory=None, retime_best: bool = True,
         progress: bool = False, fixed: Config | None = None, final_top: int = 3,
         final_rounds: int = FINAL_ROUNDS) -> list[StudySummary]:
    """Tune each problem in turn; `sampler_factory(problem)` makes a fresh sampler per study."""
    return [tune_problem(space, p, runner, storage=storage, trials=trials,
                         sampler=sampler_factory(p) if sampler_factory else None,
                         retime_best=retime_best, progress=progress, fixed=fixed,
                         final_top=final_top, final_rounds=final_rounds)
            for p in problems]
