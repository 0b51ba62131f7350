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

# The pool, the process that made it and its size: a child of os.fork() holds a copy of
# the pool object but none of its threads (a task handed to it would never run), so it
# makes its own; a new cap ($INTERCHANGE_HUB_THREADS) makes a pool of the new size.
_pool: tuple[int, int, ThreadPoolExecutor] | None = None
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # (another thread may have held it at the fork)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

# The environment variable that caps the threads (1: none besides the caller's).
THREADS_ENV = "INTERCHANGE_HUB_THREADS"


def workers() -> int:
    """How many items :func:`side_by_side` works on at once: the cores this process may
    run on (its CPU affinity where the OS says), at most 32, at most
    ``$INTERCHANGE_HUB_THREADS`` where that is set (1: everything one item after the
    other, on the calling thread; read on each call)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cores = os.cpu_count() or 1
    cap = os.environ.get(THREADS_ENV, "").strip()
    if cap:
        try:
            most = int(cap)
        except ValueError:
            most = 0
        if most < 1:
            raise InvalidOptionError(
                f"{THREADS_ENV}={cap!r}: set it to the most threads the hub may use at once, "
                "a positive whole number (1: none besides the calling thread), or unset it"
            )
        cores = min(cores, most)
    return max(1, min(cores, 32))


def _executor(size: int) -> ThreadPoolExecutor:
    global _pool
    made = _pool
    pid = os.getpid()
    if made is not None and made[0] == pid and made[1] == size:
        return made[2]
    with _lock:
        made = _pool
        if made is None or made[0] != pid or made[1] != size:
            from concurrent.futures import ThreadPoolExecutor

            if made is not None and made[0] == pid:
                made[2].shutdown(wait=False)  # its threads end once idle
            pool = ThreadPoolExecutor(size, thread_name_prefix="interchange_hub")
            _pool = made = (pid, size, pool)
        return made[2]


def side_by_side(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``[fn(item) for item in items]``, the items worked on at once on the process's pool
    of :func:`workers` threads (results in this order). Every item is worked on even when
    one raises: the first exception is raised once all have finished (none is still
    running). One after the other, on the calling thread, where there is one item or
    one worker, and for the items no thread takes (the interpreter is exiting)."""
    size = workers()
    if len(items) < 2 or size < 2:
        return _in_turn(fn, items, [])
    from concurrent.futures import wait

    futures = []
    try:
        pool = _executor(size)
        for item in items:
            futures.append(pool.submit(fn, item))
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        pass
    wait(futures)
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    return _in_turn(fn, items[len(futures) :], [f.result() for f in futures if not errors], errors)


def _in_turn(
    fn: Callable[[_T], _R],
    items: Sequence[_T],
    done: list[_R],
    errors: list[BaseException] | None = None,
) -> list[_R]:
    """``done`` and then ``fn`` of each item, in turn; the first error (of ``errors``, or
    of these items) raised once every item has been worked on."""
    errors = list(errors or ())
    for item in items:
        try:
            done.append(fn(item))
        except Exception as exc:  # noqa: BLE001 - raised below, once all are done
            errors.append(exc)
    if errors:
        raise errors[0]
    return done
