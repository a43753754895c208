"""Run many independent tasks: in this process, on a local process pool, or on Ray.

One small interface for everything in l4sim that runs a batch of simulations (``l4sim
sweep``, ``l4sim reproduce``, trainers' parallel rollouts)::

    with make_executor(jobs=4) as ex:               # or ray="local" / ray="HOST:PORT"
        for i, outcome in ex.map(fn, items):        # in completion order
            outcome.ok, outcome.value, outcome.error, outcome.attempts

``fn`` must be a module-level (picklable) function. An exception raised by ``fn`` is
caught in the worker and becomes a failed :class:`Outcome` (never retried: the same input
fails the same way). A worker process that dies (SIGKILL, out of memory, a crash in native
code) fails the tasks it was running; each of those is retried once, then recorded as
failed. Results do not depend on the executor: a task gets the same input everywhere.

- :class:`SerialExecutor` runs the tasks one after the other in this process.
- :class:`PoolExecutor` is :class:`concurrent.futures.ProcessPoolExecutor` (``forkserver``
  workers). A dead worker breaks the pool (``BrokenProcessPool``); the pool is rebuilt and
  the tasks it was running are retried, each alone in a one-worker pool, so that a task that
  kills its worker again is told apart from the ones that only shared the pool with it.
- :class:`RayExecutor` submits Ray tasks to a local Ray runtime it starts, or to an existing
  cluster (``address``). Ray is an optional dependency: ``pip install 'l4sim[ray]'``. A task
  whose node leaves the cluster mid-run is run again elsewhere (up to :data:`NODE_RETRIES`
  times besides the retry above); results arrive by task index, so the caller's output does
  not depend on which node ran what.

On Ctrl-C the pending tasks are cancelled, the workers stopped, and ``KeyboardInterrupt``
propagates once every result that had arrived was yielded.

Workers die with the process that made the executor, even when it is killed (SIGKILL, out
of memory) and cannot stop them: a pool worker asks Linux for ``SIGKILL`` when its parent
(the forkserver) exits (``PR_SET_PDEATHSIG``) and watches the executor's owner, which is not
its parent, from a thread (:data:`l4sim.processes.WATCH_S`); once the workers are gone, the
forkserver and multiprocessing's resource tracker see their pipes close and exit. A local
Ray runtime stops its raylet, GCS and workers itself when its driver dies (Ray's fate
sharing); a small reaper process started with it kills what is left (Ray's agents, which
would linger for about a minute).
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import multiprocessing
import os
import subprocess
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from l4sim.errors import L4simError
from l4sim.processes import (
    deferred_interrupt,
    descendants,
    die_with_parent,
    pdeathsig_preexec,
    pool_worker_init,
    start_reaper,
    start_time,
)

__all__ = [
    "Executor",
    "Outcome",
    "PoolExecutor",
    "RayExecutor",
    "SerialExecutor",
    "default_jobs",
    "descendants",
    "die_with_parent",
    "make_executor",
    "pdeathsig_preexec",
]

T = TypeVar("T")
R = TypeVar("R")

#: How often a task whose worker died is run again before it is recorded as failed.
RETRIES = 1

#: On Ray, how many more times a task is run again because the node it ran on left the
#: cluster (``NodeDiedError``: a node killed, preempted or scaled down, not the task's doing).
NODE_RETRIES = 3

_DIED = (
    "the worker process died {n} times running this task (killed, out of memory, or a crash "
    "in native code)"
)


@dataclass
class Outcome(Generic[R]):
    """What became of one task: its ``value``, or the ``error`` sentence; ``attempts`` runs."""

    value: R | None = None
    error: str | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


MAX_JOBS = 1024
"""The most local worker processes ``--jobs`` may ask for (each is a Python interpreter)."""


#: Modules a worker imports before its first task (and the forkserver preloads): by name, so
#: that this module depends on none of them (``l4sim.sweep`` imports the executors).
WARM_MODULES = ("l4sim.engine.simulation", "l4sim.sweep")


def default_jobs() -> int:
    """The CPUs this process may use (``--jobs`` default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _describe(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _call(fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """Run ``fn(item)`` in a worker; an exception (a Rust panic included) becomes a sentence."""
    try:
        return True, fn(item)
    except Exception as e:
        return False, _describe(e)
    except BaseException as e:  # pyo3's PanicException derives from BaseException
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        if os.environ.get("L4SIM_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        return False, _describe(e)


def _call_many(fn: Callable[[Any], Any], items: list[Any]) -> list[tuple[bool, Any]]:
    return [_call(fn, item) for item in items]


def _noop() -> None:
    return None


class Executor:
    """Base class: ``map(fn, items)`` yields ``(index, Outcome)`` as tasks finish."""

    name = "executor"
    jobs = 1

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, Outcome[R]]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release workers (idempotent)."""

    def describe(self) -> str:
        return f"{self.name} ({self.jobs} worker{'s' if self.jobs != 1 else ''})"

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Every task in this process, in order (no parallelism, no pickling)."""

    name = "serial"

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, Outcome[R]]]:
        for i, item in enumerate(items):
            ok, value = _call(fn, item)
            yield i, Outcome(value=value) if ok else Outcome(error=value)


def _mp_context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    # forkserver: workers fork from a clean process, not from a parent that may run threads
    # (polars, Ray, rich's refresh thread), where fork is unsafe. The server imports l4sim
    # once, so a new worker (the first ones, or one replacing a dead one) starts at once.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WARM_MODULES))
    _start_forkserver_deaf_to_the_terminal()
    return ctx


def _start_forkserver_deaf_to_the_terminal() -> None:
    """Start the forkserver with Ctrl-C and SIGHUP ignored. It shares the terminal's process
    group, and multiprocessing's server only ignores Ctrl-C after importing its preload
    modules: a Ctrl-C in those first seconds killed it with a traceback. An ignored signal
    stays ignored across exec (and Python then installs no KeyboardInterrupt handler), so
    the server and the workers it forks never see the group's signals; the parent decides
    for them (:func:`l4sim.processes.pool_worker_init`). The cost: a Ctrl-C in the
    milliseconds the spawn takes is ignored here too (another thread may take it while it
    is ignored, so holding it back would not keep it)."""
    import signal
    import threading
    from multiprocessing import forkserver, resource_tracker

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()  # dispositions can be set only in the main thread
        return
    # The server starts the resource tracker first: start it before, outside the window.
    resource_tracker.ensure_running()
    group = (signal.SIGINT, signal.SIGHUP)
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in group}
    try:
        forkserver.ensure_running()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _kill_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started and terminate the running workers.

    Then wait for the pool's manager thread, which closes its wake-up pipe once it sees the
    workers gone: an interpreter exiting while it did so wrote to the closed pipe from
    ``concurrent.futures``' exit hook and printed a traceback (in CPython 3.11 nothing
    orders ``_ThreadWakeup.wakeup`` against ``close``; gh-125451 added a lock later)."""
    processes = dict(getattr(pool, "_processes", None) or {})
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes.values():
        if p.is_alive():
            p.terminate()
    for p in processes.values():
        p.join(timeout=5)
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout=5)


class PoolExecutor(Executor):
    """A local process pool (``concurrent.futures.ProcessPoolExecutor``) of ``jobs`` workers.

    Tasks go to the workers in small chunks (:meth:`chunk_size`), at most ``jobs + 1``
    chunks at a time, so that a broken pool has few tasks to re-run and Ctrl-C has little to
    cancel.
    """

    name = "pool"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, jobs or default_jobs())
        self._ctx = _mp_context()
        # Start the workers now: they come up while the caller prepares its tasks.
        self._pool: cf.ProcessPoolExecutor | None = self._new_pool(self.jobs)
        for _ in range(self.jobs):
            self._submit(self._pool, _noop)

    @staticmethod
    def _submit(pool: cf.ProcessPoolExecutor, fn: Callable[..., Any], *args: Any) -> Any:
        """``pool.submit``, whole: a submit may start a worker (forkserver: fork it, then
        send it its state), and a stop signal halfway left a worker the pool did not know
        of, to fail with a traceback once the owner was gone. The signal is delivered when
        the submit is done, and the pool then stops the worker with the others."""
        with deferred_interrupt():
            return pool.submit(fn, *args)

    def _new_pool(self, workers: int) -> cf.ProcessPoolExecutor:
        owner = os.getpid()
        return cf.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=self._ctx,
            initializer=pool_worker_init,
            initargs=(owner, start_time(owner)),
        )

    def chunk_size(self, n: int) -> int:
        """Tasks per hand-over: 1 for few tasks, up to 8 for many (fewer round trips)."""
        return max(1, min(8, n // (16 * self.jobs)))

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, Outcome[R]]]:
        todo = list(range(len(items)))[::-1]  # stack: pop() gives the next index in order
        attempts = [0] * len(items)
        chunk = self.chunk_size(len(items))
        # future -> (indices, its pool); isolated pools run one retried task each.
        Running = dict[cf.Future[list[tuple[bool, Any]]], tuple[list[int], cf.ProcessPoolExecutor]]
        running: Running = {}
        isolated: set[cf.ProcessPoolExecutor] = set()
        if self._pool is None:
            self._pool = self._new_pool(self.jobs)
        try:
            while todo or running:
                main = self._pool
                assert main is not None
                in_main = sum(1 for _, p in running.values() if p is main)
                while todo and in_main < self.jobs + 1:
                    batch = [todo.pop() for _ in range(min(chunk, len(todo)))]
                    try:
                        fut = self._submit(main, _call_many, fn, [items[i] for i in batch])
                    except BrokenProcessPool:
                        todo.extend(reversed(batch))
                        break
                    for i in batch:
                        attempts[i] += 1
                    running[fut] = (batch, main)
                    in_main += 1
                if not running:  # the pool broke between two tasks
                    _kill_workers(main)
                    self._pool = self._new_pool(self.jobs)
                    continue
                done, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
                broken: list[int] = []
                main_broke = False
                for fut in done:
                    batch, pool = running.pop(fut)
                    if pool in isolated:
                        isolated.discard(pool)
                        _kill_workers(pool)
                    if fut.cancelled() or isinstance(fut.exception(), BrokenProcessPool):
                        broken += batch
                        main_broke = main_broke or pool is main
                    else:
                        yield from self._outcomes(fut, batch, attempts)
                if main_broke:
                    # Every task still in the broken pool died with it (or was never run).
                    for fut, (batch, pool) in list(running.items()):
                        if pool is main:
                            running.pop(fut)
                            if fut.done() and not fut.cancelled() and fut.exception() is None:
                                yield from self._outcomes(fut, batch, attempts)
                            else:
                                broken += batch
                    _kill_workers(main)
                    self._pool = self._new_pool(self.jobs)
                for i in sorted(broken):
                    if attempts[i] > RETRIES:
                        yield i, Outcome(error=_DIED.format(n=attempts[i]), attempts=attempts[i])
                        continue
                    # Alone in a pool of its own: if it dies again, it is the one to blame.
                    attempts[i] += 1
                    alone = self._new_pool(1)
                    isolated.add(alone)
                    running[self._submit(alone, _call_many, fn, [items[i]])] = ([i], alone)
        finally:
            for pool in isolated:
                _kill_workers(pool)
            if running and self._pool is not None:  # interrupted (Ctrl-C, a consumer's error)
                _kill_workers(self._pool)
                self._pool = None

    @staticmethod
    def _outcomes(
        fut: cf.Future[list[tuple[bool, Any]]], batch: list[int], attempts: list[int]
    ) -> Iterator[tuple[int, Outcome[Any]]]:
        exc = fut.exception()
        for k, i in enumerate(batch):
            if exc is not None:  # e.g. an item or a result could not be pickled
                yield i, Outcome(error=_describe(exc), attempts=attempts[i])
                continue
            ok, value = fut.result()[k]
            yield (
                i,
                Outcome(value=value, attempts=attempts[i])
                if ok
                else Outcome(error=value, attempts=attempts[i]),
            )

    def close(self) -> None:
        # Every task's result is in (or the caller stopped): the workers are idle or still
        # starting. Terminating them, rather than a graceful shutdown, also ends one that is
        # still reading its start-up state, which an exiting owner would otherwise leave to
        # fail with a traceback once the pool's semaphores are gone.
        if self._pool is not None:
            _kill_workers(self._pool)
            self._pool = None


def _warm() -> None:
    """A worker's first task: import what the tasks need."""
    for name in WARM_MODULES:
        importlib.import_module(name)


class RayExecutor(Executor):
    """Ray tasks: on a local Ray runtime started here (``address=None``, ``jobs`` CPUs) or on
    the cluster at ``address`` (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:PORT"``)."""

    name = "ray"

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise L4simError(
                "--ray needs Ray, which is not installed: pip install 'l4sim[ray]'"
            ) from None
        self._ray = ray
        self.address = address
        self._jobs = jobs
        self._started = False
        self._remote: Any = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self.jobs = max(1, jobs or default_jobs()) if address is None else 1

    def _ensure(self) -> None:
        """Start or join Ray on first use (a sweep with nothing left to run does neither)."""
        ray = self._ray
        if self._remote is not None:
            return
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": False,
            }
            if self.address is None:
                kwargs["num_cpus"] = max(1, self._jobs or default_jobs())
                # Ray runs its workers at nice 15 by default, so on a shared machine every
                # other process comes first; a local runtime here runs simulations as the
                # pool does, at the caller's priority (set RAY_worker_niceness to change it).
                os.environ.setdefault("RAY_worker_niceness", "0")
            else:
                kwargs["address"] = self.address
            before = set(descendants(os.getpid()))
            try:
                ray.init(**kwargs)
            except Exception as e:
                where = (
                    "start a local Ray runtime"
                    if self.address is None
                    else f"join {self.address!r}"
                )
                raise L4simError(f"could not {where} ({_describe(e)})") from None
            self._started = True
            if self.address is None:
                # Ray's own processes, started just now: killed if this process is.
                self._reaper = start_reaper(
                    [p for p in descendants(os.getpid()) if p not in before]
                )
        self.jobs = max(1, int(ray.cluster_resources().get("CPU", 1)))
        # SPREAD: over the cluster's nodes, rather than filling the driver's node first and
        # spilling over only when its scheduler sees it full.
        self._remote = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_call)
        if self._started:
            # Start the local workers now, each with l4sim imported (as the pool's
            # forkserver preloads it), instead of during the first tasks.
            warm = ray.remote(num_cpus=1)(_warm)
            ray.get([warm.remote() for _ in range(self.jobs)])

    def describe(self) -> str:
        where = "local runtime" if self.address is None else self.address
        return f"ray ({where}, {self.jobs} CPUs)"

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, Outcome[R]]]:
        if not items:
            return
        self._ensure()
        ray = self._ray
        attempts = [0] * len(items)
        lost = [0] * len(items)
        todo = list(range(len(items)))[::-1]
        running: dict[Any, int] = {}
        limit = 2 * self.jobs + 2
        fn_ref = ray.put(fn)
        try:
            while todo or running:
                while todo and len(running) < limit:
                    i = todo.pop()
                    attempts[i] += 1
                    running[self._remote.remote(fn_ref, items[i])] = i
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    i = running.pop(ref)
                    try:
                        ok, value = ray.get(ref)
                    except ray.exceptions.RayError as e:  # the worker (or its node) died
                        if isinstance(e, ray.exceptions.NodeDiedError):
                            lost[i] += 1
                        if attempts[i] <= RETRIES + min(lost[i], NODE_RETRIES):
                            todo.append(i)
                            continue
                        yield i, Outcome(error=_describe(e), attempts=attempts[i])
                        continue
                    out: Outcome[Any] = Outcome(value=value) if ok else Outcome(error=value)
                    out.attempts = attempts[i]
                    yield i, out
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False
        if self._reaper is not None:
            self._reaper.kill()
            self._reaper.wait()
            self._reaper = None


def make_executor(jobs: int | None = None, ray: str | None = None) -> Executor:
    """The executor the CLI flags ask for: ``ray`` (``"local"`` or an address) wins, then
    ``jobs == 1`` is serial, anything else a process pool of ``jobs`` (default: the CPUs)."""
    if jobs is not None and jobs < 1:
        raise L4simError(f"--jobs must be at least 1, not {jobs}")
    if jobs is not None and jobs > MAX_JOBS:
        raise L4simError(
            f"--jobs {jobs} is more than the {MAX_JOBS} worker processes l4sim starts on one "
            f"machine (this one has {default_jobs()} CPUs); use --ray for a cluster"
        )
    if ray is not None:
        return RayExecutor(None if ray in ("", "local") else ray, jobs)
    if jobs == 1:
        return SerialExecutor()
    return PoolExecutor(jobs)
