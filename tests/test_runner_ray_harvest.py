"""The Ray device pool's bookkeeping when an actor dies, against a stand-in for Ray whose
reports arrive in the order a test chooses: which job a crash is blamed on, and which go on to a
fresh actor. (A real Ray reports them as the cluster's timing falls: under load, CI once saw the
job queued behind a crash report the death first and take the blame, and later the job before
a crash lose its reply with the actor.) Jobs that die together run again, each alone; a job
that dies alone is the crash."""

import collections

from autotune.runner import Cause, Result
from autotune.runner.ray_sides import RayDevices


class FakeRay:
    class exceptions:
        class RayActorError(Exception):
            pass

        class RayTaskError(Exception):
            cause = None

    def __init__(self):
        self.ready: set = set()

    def wait(self, refs, num_returns, timeout):
        return [r for r in refs if r in self.ready], [r for r in refs if r not in self.ready]

    def get(self, ref, timeout=None):
        return ref.resolve()

    def kill(self, actor, no_restart=False):
        actor.dead = True


class FakeActor:
    """Runs its calls in order; a job named "crash" kills it, and every call from then on."""

    def __init__(self):
        self.sent, self.dead = [], False

    @property
    def evaluate(self):
        return self

    def remote(self, job):
        self.sent.append(FakeRef(self, job))
        return self.sent[-1]


class FakeRef:
    """A job's call; "lost" finishes, but its reply goes down with a crash behind it."""

    def __init__(self, actor: FakeActor, job: str):
        self.actor, self.job = actor, job

    def resolve(self) -> Result:
        jobs = [r.job for r in self.actor.sent]
        if "crash" in jobs and (jobs.index("crash") <= self.actor.sent.index(self)
                                or self.job == "lost"):
            raise FakeRay.exceptions.RayActorError()
        return Result(self.job)


def pool_of_one(ray: FakeRay) -> tuple[RayDevices, list[FakeActor]]:
    """A pool of one actor, its successors listed as they start."""
    pool, actors = object.__new__(RayDevices), [FakeActor()]

    def new_actor():
        actors.append(FakeActor())
        return actors[-1], "stand-in GPU"

    pool._ray, pool._new_actor, pool.depth, pool.restarts = ray, new_actor, 3, 0
    pool._actors, pool.names, pool._refs, pool._began = [actors[0]], ["stand-in GPU"], {}, {}
    pool._waiting, pool._suspects = collections.deque(), set()
    return pool, actors


def run_on(ray, actor, pool) -> list:
    """(key, cause) of what the pool reports once `actor`'s calls have all reported."""
    ray.ready = set(actor.sent)
    return [(key, r.cause) for key, r in pool.harvest()]


def test_the_crash_is_blamed_on_the_job_running_not_on_the_first_to_report_it():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    for job in ("done", "crash", "queued"):
        pool.start(job, job)
    ray.ready = {actors[0].sent[2]}  # only the job queued behind the crash has reported
    assert [(key, r.ok) for key, r in pool.harvest()] == [("done", True)]
    # the two that died together run again, each alone: the crash first, on a fresh actor
    assert [r.job for r in actors[1].sent] == ["crash"] and pool.busy == 2
    out = run_on(ray, actors[1], pool)
    assert out == [("crash", Cause.CRASH)] and [r.job for r in actors[2].sent] == ["queued"]
    assert run_on(ray, actors[2], pool) == [("queued", None)]
    assert pool.busy == 0 and pool.restarts == 2


def test_a_crash_reported_by_itself_is_blamed_at_once():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    pool.start("crash", "crash")
    assert run_on(ray, actors[0], pool) == [("crash", Cause.CRASH)] and pool.restarts == 1


def test_the_job_before_a_crash_that_lost_its_reply_is_not_blamed():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    for job in ("lost", "crash"):
        pool.start(job, job)
    assert run_on(ray, actors[0], pool) == []  # both died: neither is blamed yet
    assert run_on(ray, actors[1], pool) == [("lost", None)]  # alone on a fresh actor
    assert [r.job for r in actors[1].sent] == ["lost", "crash"]  # then the crash, alone
    assert run_on(ray, actors[1], pool) == [("crash", Cause.CRASH)]
    assert pool.busy == 0 and pool.restarts == 2


def test_nothing_is_queued_behind_a_job_that_died_beside_a_crash():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    for job in ("lost", "crash"):
        pool.start(job, job)
    run_on(ray, actors[0], pool)
    pool.start("new", "new")
    assert [r.job for r in actors[1].sent] == ["lost"] and pool.busy == 3
