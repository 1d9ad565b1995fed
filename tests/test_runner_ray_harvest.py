"""The Ray device pool's bookkeeping when an actor dies, against a stand-in for Ray whose
reports arrive in the order a test chooses: which job a crash is blamed on, and which go on to a
fresh actor. (A real Ray reports them as the cluster's timing falls: under load, CI once saw the
job queued behind a crash report the death first and take the blame.)"""

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
    def __init__(self, actor: FakeActor, job: str):
        self.actor, self.job = actor, job

    def resolve(self) -> Result:
        jobs = [r.job for r in self.actor.sent]
        if "crash" in jobs and jobs.index("crash") <= self.actor.sent.index(self):
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
    return pool, actors


def test_the_crash_is_blamed_on_the_job_running_not_on_the_first_to_report_it():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    for job in ("done", "crash", "queued"):
        pool.start(job, job)
    ray.ready = {actors[0].sent[2]}  # only the job queued behind the crash has reported
    out = dict(pool.harvest())
    assert out["done"].ok and out["crash"].cause is Cause.CRASH and "queued" not in out
    assert "device actor died" in out["crash"].message
    assert pool.restarts == 1 and [r.job for r in actors[1].sent] == ["queued"]
    ray.ready = set(actors[1].sent)
    assert [(key, r.ok) for key, r in pool.harvest()] == [("queued", True)]
    assert pool.busy == 0


def test_a_crash_reported_by_itself_sends_the_queue_on():
    ray = FakeRay()
    pool, actors = pool_of_one(ray)
    for job in ("crash", "queued"):
        pool.start(job, job)
    ray.ready = set(actors[0].sent)  # both report the death
    out = pool.harvest()
    assert [(key, r.cause) for key, r in out] == [("crash", Cause.CRASH)]
    assert [r.job for r in actors[1].sent] == ["queued"] and pool.restarts == 1
