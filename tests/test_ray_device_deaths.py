"""How the Ray device pool settles an actor's death, on a stand-in for Ray (no Ray needed): the
crash is blamed once, the jobs beside it get their results, even where the job before the crash
lost its reply with the actor (as CI saw under load)."""

import collections
import types

from autotune.runner import Cause, Result
from autotune.runner.base import Candidate, Compiled, Job
from autotune.runner.ray_sides import RayDevices
from autotune.testing.synthetic import SyntheticSpace

SPACE = SyntheticSpace()
PROBLEM = SPACE.parse_problem("128x48x32")


class ActorDied(Exception):
    pass


class FakeRay:
    """Actors that run their calls in order when waited on. A job named 'crash' kills its
    actor: its call and those queued behind it raise; with `lost_reply`, so does the call that
    finished just before it."""

    exceptions = types.SimpleNamespace(RayActorError=ActorDied, RayTaskError=RuntimeError)

    def __init__(self, lost_reply: bool):
        self.lost_reply, self.actors, self.runs = lost_reply, [], []

    def remote(self, **_):
        def wrap(cls):
            return types.SimpleNamespace(remote=lambda evaluator: FakeActor(self))
        return wrap

    def get(self, ref, timeout=None):
        if isinstance(ref, FakeCall):
            ref.actor.run()
            if ref.died:
                raise ActorDied()
            return ref.value
        return ref  # the actor's ready(): a logical GPU, no name

    def wait(self, refs, num_returns, timeout):
        for ref in refs:
            ref.actor.run()
        return refs, []

    def kill(self, actor, no_restart):
        actor.dead = True


class FakeCall:
    def __init__(self, actor, job):
        self.actor, self.job, self.done, self.died, self.value = actor, job, False, False, None


class FakeActor:
    def __init__(self, world):
        self.world, self.calls, self.dead = world, [], False
        self.ready = types.SimpleNamespace(remote=lambda: None)
        self.evaluate = types.SimpleNamespace(remote=self.call)

    def call(self, job):
        self.calls.append(FakeCall(self, job))
        return self.calls[-1]

    def run(self):
        for n, call in enumerate(self.calls):
            if call.done:
                continue
            call.done = True
            if self.dead:
                call.died = True
                continue
            self.world.runs.append((self, call.job.candidate.tag))
            if call.job.candidate.tag == "crash":
                self.dead = call.died = True
                if self.world.lost_reply and n > 0:
                    self.calls[n - 1].died = True
            else:
                call.value = Result(None)


def pool(lost_reply: bool, actors: int = 2) -> tuple[RayDevices, FakeRay]:
    ray = FakeRay(lost_reply)
    devices = object.__new__(RayDevices)
    devices._ray, devices.depth, devices.start_timeout_s = ray, 2, 1.0
    devices.evaluator = None
    devices._actor_class = ray.remote()(None)
    devices.names, devices._actors = [], []
    for _ in range(actors):
        actor, name = devices._new_actor()
        devices._actors.append(actor)
        devices.names.append(name)
    devices._refs, devices._began, devices.restarts = {}, {}, 0
    devices._waiting, devices._suspects = collections.deque(), set()
    return devices, ray


def job(tag):
    return Job(Candidate(SPACE, SPACE.default_config(PROBLEM), PROBLEM, tag=tag),
               Compiled(artifact_path=None), seed=0)


def run_all(devices, tags):
    for n, tag in enumerate(tags):
        devices.start(n, job(tag))
    results = {}
    while devices.busy:
        for key, result in devices.harvest():
            assert key not in results
            results[key] = result.cause
    return [results[n] for n in range(len(tags))]


def test_the_job_before_a_crash_that_lost_its_reply_runs_again_alone():
    devices, ray = pool(lost_reply=True, actors=1)
    assert run_all(devices, ["good", "crash"]) == [None, Cause.CRASH]
    # both died together, so each ran again alone on a fresh actor: the crash once more
    assert [tag for _, tag in ray.runs] == ["good", "crash", "good", "crash"]
    assert devices.restarts == 2 and not devices._suspects


def test_a_crash_that_dies_alone_is_blamed_at_once():
    devices, ray = pool(lost_reply=False, actors=1)
    assert run_all(devices, ["crash"]) == [Cause.CRASH]
    assert devices.restarts == 1 and len(ray.runs) == 1


def test_jobs_queued_behind_a_crash_run_on_the_fresh_actors():
    devices, ray = pool(lost_reply=False)
    assert run_all(devices, ["crash", "good", "good", "good"]) == [Cause.CRASH, None, None, None]
    assert sorted(tag for _, tag in ray.runs).count("crash") == 2  # once beside a job, once alone
    assert not devices._suspects


def test_nothing_waits_behind_a_suspect():
    devices, ray = pool(lost_reply=True, actors=1)
    devices.start(0, job("good"))
    devices.start(1, job("crash"))
    devices.harvest()  # both died: each is a suspect, the first one sent alone
    devices.start(2, job("good"))
    assert len(devices._refs) == 1 and len(devices._waiting) == 2
