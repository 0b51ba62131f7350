"""The process's pool of threads (``_core.threads``): results in order, errors once all
items are done, a forked child that makes its own pool, and the one-at-a-time fallback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

import interchange_hub as ih
from interchange_hub._core import threads


def test_items_are_worked_on_at_once_and_come_back_in_order() -> None:
    if threads.workers() < 2:
        pytest.skip("one core: side_by_side works one item after the other")
    seen: set[int] = set()
    both = threading.Barrier(2, timeout=10)

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        if i < 2:
            both.wait()  # would time out one after the other
        return i * i

    assert threads.side_by_side(work, list(range(6))) == [0, 1, 4, 9, 16, 25]
    assert threading.get_ident() not in seen and len(seen) >= 2


@pytest.mark.parametrize("at_once", [2, 1])
def test_an_error_is_raised_once_every_item_has_finished(
    at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On threads or one item after the other: every item is worked on, then the first
    # error is raised.
    monkeypatch.setattr(threads, "workers", lambda: at_once)
    done: list[int] = []

    def work(i: int) -> int:
        if i == 0:
            raise ValueError("the first item fails")
        time.sleep(0.05)
        done.append(i)
        return i

    with pytest.raises(ValueError, match="the first item fails"):
        threads.side_by_side(work, [0, 1, 2])
    assert sorted(done) == [1, 2]


def test_one_item_or_one_core_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    here = threading.get_ident()
    assert threads.side_by_side(lambda i: threading.get_ident(), [0]) == [here]
    monkeypatch.setattr(threads, "workers", lambda: 1)
    assert threads.side_by_side(lambda i: threading.get_ident(), [0, 1]) == [here, here]


def test_items_no_thread_takes_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    # At interpreter exit the pool takes no more tasks: the rest run one after the other.
    class Closed:
        def submit(self, fn: object, item: object) -> None:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(threads, "workers", lambda: 2)
    monkeypatch.setattr(threads, "_executor", lambda size: Closed())
    assert threads.side_by_side(lambda i: i + 1, [1, 2, 3]) == [2, 3, 4]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_a_forked_child_makes_a_pool_of_its_own() -> None:
    # The child holds a copy of the parent's pool object without its threads: handed a
    # task, that pool would never run it. A subprocess, with a deadline, in case it hangs.
    code = (
        "import os, sys\n"
        "from interchange_hub._core import threads\n"
        "threads.workers = lambda: 2\n"
        "assert threads.side_by_side(abs, [-1, -2]) == [1, 2]\n"
        "parent = threads._pool\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = threads.side_by_side(abs, [-3, -4]) == [3, 4] and threads._pool is not parent\n"
        "    os._exit(0 if ok else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, timeout=60, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()


def test_the_environment_caps_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    cores = threads.workers()
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    assert threads.workers() == 1
    here = threading.get_ident()
    assert threads.side_by_side(lambda i: threading.get_ident(), [0, 1]) == [here, here]
    monkeypatch.setenv(threads.THREADS_ENV, " 2 ")
    assert threads.workers() == min(cores, 2)
    for bad in ("0", "-1", "two", "1.5", "\u00b2"):
        monkeypatch.setenv(threads.THREADS_ENV, bad)
        with pytest.raises(ih.InvalidOptionError, match="INTERCHANGE_HUB_THREADS"):
            threads.workers()
    monkeypatch.setenv(threads.THREADS_ENV, "")
    assert threads.workers() == cores


def test_a_new_cap_makes_a_pool_of_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cap is read on each call: a pool made for more threads is replaced.
    if threads.workers() < 2:
        pytest.skip("one core: no pool is made")
    monkeypatch.setattr(threads, "_pool", None)
    monkeypatch.setattr(threads, "workers", lambda: 3)
    threads.side_by_side(abs, [1, 2])
    assert threads._pool is not None and threads._pool[1] == 3
    running = 0
    most = 0
    lock = threading.Lock()

    def work(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return i

    monkeypatch.setattr(threads, "workers", lambda: 2)
    assert threads.side_by_side(work, list(range(6))) == list(range(6))
    assert threads._pool is not None and threads._pool[1] == 2 and most == 2
