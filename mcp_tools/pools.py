"""A thread pool that runs short jobs back to back on one thread (``POOL_JOIN_MS`` above 0).

``concurrent.futures.ThreadPoolExecutor`` hands each job to whichever of its threads is idle:
under load every thread of the pool runs a job, each a few hundred microseconds of Python, and
they take the GIL in turn. A job then waits for the others' turns, and every hand-over puts a
thread to sleep and wakes another; with the event loop's thread and the other server processes
on the same cores those waits make the tail of the latency (issue 37; docs/explanation/capacity.md).

Here one thread, the first, takes every job from the queue, one after the other. The others
(helpers, up to ``size`` threads in all) are parked: a watcher thread, looking every
``join_after`` seconds while jobs wait, lets one in once every job running has run for
``join_after`` (it waits on I/O, a slow query, a person). A helper goes on taking jobs while that
holds and parks again when it does not. So a slow job delays the queue by at most about
``join_after``, and at most ``size`` jobs run at once. Once jobs *typically* take
``join_after`` or more (a moving average of their times), the pool is wide: a job queued while
every awake thread is busy lets a helper in at once and helpers keep taking jobs, as in a
``ThreadPoolExecutor`` of ``size`` (otherwise a new job, young for ``join_after``, would hold
the next one back every time: at most one start per ``join_after``). The watcher sleeps while no
job waits behind a running one.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["Pool"]

# The watcher sleeps once it found no job waiting this many looks in a row, and never looks
# again sooner than this (seconds).
_IDLE_LOOKS = 20
_SHORTEST_LOOK = 0.0005
# The weight of a job's time in the pool's moving average of them.
_WEIGHT = 0.2


class _Job:
    __slots__ = ("args", "fn", "future", "kwargs")

    def __init__(
        self, future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.future = future
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # as ThreadPoolExecutor does: the future carries it
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)


_STOP = None  # put on the queue once per thread at shutdown


class Pool(Executor):
    """One thread runs the jobs in turn; up to ``size - 1`` helpers join it while every running
    job has run ``join_after`` seconds or more (see the module's doc). Threads are made on first
    need and kept."""

    def __init__(self, size: int, name: str, join_after: float) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one thread")
        if join_after <= 0:
            raise ValueError("join_after must be above 0 (use a ThreadPoolExecutor for no wait)")
        self.size = size
        self.name = name
        self.join_after = join_after
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # Per thread running a job: when it began (time.monotonic). Written by that thread only;
        # the watcher reads a copy (each dict operation is atomic under the GIL).
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()  # threads' making and counts; not taken per job
        self._parked = threading.Semaphore(0)  # helpers wait here to be let in
        self._helpers: list[threading.Thread] = []
        self._parked_count = 0
        self._first: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._awake = 1  # threads taking jobs: the first and the helpers let in, not parked
        # How long jobs take, a moving average (seconds; each thread adds its jobs, unlocked: a
        # lost update only delays the average). At join_after or more the pool is wide: jobs
        # wait on I/O, and every thread takes jobs as in a ThreadPoolExecutor.
        self.typical = 0.0
        self._wake = threading.Event()  # set to wake a sleeping watcher
        self._watcher_asleep = False
        self._closed = False

    # ------------------------------------------------------------------ Executor

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self._closed:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[Any] = Future()
        self._jobs.put(_Job(future, fn, args, kwargs))
        if self._first is None:
            self._start()
        elif self.typical >= self.join_after:
            if len(self._started) >= self._awake < self.size:
                self._let_in()  # wide: a thread for it now, as a ThreadPoolExecutor would
        elif self._watcher_asleep and self._started:
            self._wake_watcher()  # a job waits behind a running one: the watcher looks again
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                threads: list[threading.Thread] = []
            else:
                self._closed = True
                if cancel_futures:
                    while True:
                        try:
                            job = self._jobs.get_nowait()
                        except queue.Empty:
                            break
                        if job is not None:
                            job.future.cancel()
                threads = [t for t in (self._first, *self._helpers) if t is not None]
                for _ in threads:
                    self._jobs.put(_STOP)
                for _ in self._helpers:
                    self._parked.release()
                self._wake.set()
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()

    # ------------------------------------------------------------------ threads

    def _start(self) -> None:
        with self._lock:
            if self._first is None and not self._closed:
                self._first = threading.Thread(target=self._run_first, name=f"{self.name}_0", daemon=True)
                self._first.start()
                if self.size > 1:
                    self._watcher = threading.Thread(target=self._look, name=f"{self.name}_watcher", daemon=True)
                    self._watcher.start()

    def _run_first(self) -> None:
        me = threading.get_ident()
        jobs, started = self._jobs, self._started
        while True:
            job = jobs.get()
            if job is None:
                return
            started[me] = began = time.monotonic()
            if self._watcher_asleep and not jobs.empty():
                self._wake_watcher()  # the next job waits behind this one
            try:
                job.run()
            finally:
                del started[me], job
                self.typical += (time.monotonic() - began - self.typical) * _WEIGHT

    def _wake_watcher(self) -> None:
        self._watcher_asleep = False
        self._wake.set()

    def _run_helper(self) -> None:
        me = threading.get_ident()
        jobs, started = self._jobs, self._started
        while True:
            self._parked.acquire()
            # Let in: jobs while the pool is wide or every other running job has run join_after.
            while True:
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    return
                started[me] = began = time.monotonic()
                try:
                    job.run()
                finally:
                    del started[me], job
                    now = time.monotonic()
                    self.typical += (now - began - self.typical) * _WEIGHT
                if self.typical < self.join_after and not self._others_slow(now):
                    break
            if self._closed:
                return
            with self._lock:
                self._parked_count += 1
                self._awake -= 1

    def _others_slow(self, now: float) -> bool:
        """Every running job (this thread's excepted: it runs none now) began ``join_after`` ago
        or more, and there is room for one more."""
        began = list(self._started.values())
        if len(began) >= self.size:
            return False
        join_after = self.join_after
        return all(now - at >= join_after for at in began)

    def _let_in(self) -> None:
        """A parked helper takes the next job, or a new helper (below ``size`` threads)."""
        with self._lock:
            if self._closed:
                return
            if self._parked_count:
                self._parked_count -= 1
                self._awake += 1
                self._parked.release()
                return
            if len(self._helpers) + 1 < self.size:
                thread = threading.Thread(
                    target=self._run_helper, name=f"{self.name}_{len(self._helpers) + 1}", daemon=True
                )
                self._helpers.append(thread)
                self._awake += 1
                self._parked.release()
                thread.start()

    def _look(self) -> None:
        """The watcher: while jobs wait behind running ones, look every ``join_after`` whether
        each running job has run that long, and let a helper in if so."""
        idle = 0
        join_after = self.join_after
        while not self._closed:
            now = time.monotonic()
            began = list(self._started.values())
            if began and not self._jobs.empty():
                idle = 0
                wide = self.typical >= join_after
                if len(began) < self.size and (wide or all(now - at >= join_after for at in began)):
                    self._let_in()
                    time.sleep(join_after)  # the helper's job is the youngest now
                else:
                    time.sleep(max(max(began) + join_after - now, _SHORTEST_LOOK))
                continue
            idle += 1
            if idle < _IDLE_LOOKS:
                time.sleep(join_after)
                continue
            # Nothing waited for a while: sleep until submit() finds a job behind a running one.
            self._wake.clear()
            self._watcher_asleep = True
            if self._started and not self._jobs.empty():  # came meanwhile
                self._watcher_asleep = False
            else:
                self._wake.wait()
            idle = 0
