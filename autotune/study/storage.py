"""Study storage: an SQLite file under studies/ by default, or any Optuna RDB URL (PostgreSQL
for several drivers). Heartbeats let a restarted driver find trials its predecessor left running
and re-queue them."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import pathlib
import time
import warnings

import optuna

from ..errors import UserError

HEARTBEAT_S = 5
CREATE_ATTEMPTS = 5
GRACE_S = 20


class StorageError(UserError):
    pass


def default_storage_url(space_name: str, directory: str = "studies") -> str:
    return f"sqlite:///{directory}/{space_name}.db"


def _display(url: str) -> str:
    try:
        import sqlalchemy

        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def open_storage(url: str, heartbeat_s: int = HEARTBEAT_S, grace_s: int = GRACE_S,
                 create: bool = True) -> optuna.storages.RDBStorage:
    """Open the storage at `url` (creating it unless `create` is False); StorageError with the
    reason if it cannot be."""
    engine_kwargs, lock = {}, contextlib.nullcontext
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        path = pathlib.Path(url[len("sqlite:///"):])
        if not create and not path.exists():
            raise StorageError(f"no storage at {path} (a mistyped path?)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the directory for {url}: {exc.strerror}") from None
        # Several processes (drivers, `autotune results`) may touch the file at once.
        engine_kwargs["connect_args"] = {"timeout": 30}
        lock = functools.partial(_creation_lock, path)  # a fresh one for each attempt
    for attempt in range(CREATE_ATTEMPTS):
        try:
            with lock(), warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                storage = optuna.storages.RDBStorage(
                    url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_s,
                    grace_period=grace_s,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
                        max_retry=2))
            break
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            # Drivers creating a new database's tables at once collide (Optuna's schema setup is
            # not atomic); the loser finds the tables made when it tries again.
            if attempt + 1 < CREATE_ATTEMPTS and ("already exists" in reason
                                                  or "duplicate key" in reason):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise StorageError(f"cannot open storage {_display(url)}: {reason}") from None
    if url.startswith("sqlite"):
        _fast_sqlite(storage.engine)
    return storage


@contextlib.contextmanager
def _creation_lock(path: pathlib.Path):
    """Serialize opening one SQLite file across processes: two drivers creating its tables at
    once fail with "table studies already exists" (Optuna's schema setup is not atomic)."""
    with open(path.with_name(path.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _fast_sqlite(engine) -> None:
    """Write-ahead log, no fsync per commit: a trial writes ~15 small commits, which otherwise
    cost ~10 ms each. Survives a killed driver (only a power cut may lose the last trials).

    Transactions begin IMMEDIATE, holding the write lock from their first read: pysqlite would
    run the reads before an update outside its transaction, and Optuna pops a queued trial by a
    read then an update (SELECT ... FOR UPDATE elsewhere), so two drivers could both take it."""
    import sqlalchemy

    def on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        dbapi_connection.isolation_level = None  # no implicit BEGIN: on_begin sends it

    def on_begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    sqlalchemy.event.listen(engine, "connect", on_connect)
    sqlalchemy.event.listen(engine, "begin", on_begin)
    engine.dispose()  # connections opened while creating the tables predate the pragmas
