"""Work done side by side: one pool of threads for the whole process, made on first use.

For steps whose work releases the GIL (pyarrow's casts, numpy's copies): each item on a
thread of its own, as many at once as the machine has cores. Starting a
``ThreadPoolExecutor`` for each call cost 0.45 ms (two trivial tasks, this 2-core machine),
handing tasks to a pool that is already running 0.07-0.17 ms. No data library here.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, TypeVar

from interchange_hub.errors import InvalidOptionError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from concurrent.futures import ThreadPoolExecutor

_T = TypeVar("_T")
_R = TypeVar("_R")

# The pool and the process that made it: a child of os.fork() holds a copy of the pool
# object but none of its threads (a task handed to it would never run), so it makes its own.
_pool: tuple[int, ThreadPoolExecutor] | None = None
_lock = threading.Lock()


# The environment variable that caps the threads (1: none besides the caller's).
THREADS_ENV = "INTERCHANGE_HUB_THREADS"


def workers() -> int:
    """How many items :func:`side_by_side` works on at once: the cores this process may
    run on (its CPU affinity where the OS says), at most 32, at most
    ``$INTERCHANGE_HUB_THREADS`` where that is set to a positive number (1: everything
    one item after the other, on the calling thread)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cores = os.cpu_count() or 1
    cap = os.environ.get(THREADS_ENV, "").strip()
    if cap:
        most = int(cap) if cap.isdigit() else 0
        if most < 1:
            raise InvalidOptionError(
                f"{THREADS_ENV}={cap!r}: set it to the most threads the hub may use at once, "
                "a positive whole number (1: none besides the calling thread), or unset it"
            )
        cores = min(cores, most)
    return max(1, min(cores, 32))


def _executor() -> ThreadPoolExecutor:
    global _pool
    made = _pool
    pid = os.getpid()
    if made is not None and made[0] == pid:
        return made[1]
    with _lock:
        if _pool is None or _pool[0] != pid:
            from concurrent.futures import ThreadPoolExecutor

            _pool = (pid, ThreadPoolExecutor(workers(), thread_name_prefix="interchange_hub"))
        return _pool[1]


def side_by_side(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``[fn(item) for item in items]``, the items worked on at once on the process's pool
    of threads (results in this order; an exception is raised here once every item has
    finished, so none is still running). One after the other where there is one item or
    one core, and for the items no thread can take (the interpreter is exiting)."""
    if len(items) < 2 or workers() < 2:
        return [fn(item) for item in items]
    from concurrent.futures import wait

    futures = []
    try:
        pool = _executor()
        for item in items:
            futures.append(pool.submit(fn, item))
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        pass
    wait(futures)
    done = [f.result() for f in futures]
    return done + [fn(item) for item in items[len(futures) :]]
