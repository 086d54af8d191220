"""Several server processes on one port (``serve --workers N``).

The parent binds the port, then forks N workers that each run a whole server (their own
event loop, store connection and pool) on a listening socket of its own on that port
(SO_REUSEPORT, see ``binding.bind_each``); the kernel spreads new connections over
them. The parent only supervises: SIGTERM/SIGINT go on to every worker, a worker that dies
while the server is meant to run is started again on its socket (a worker that dies within
a second of starting, five times running, stops the whole server instead). A worker whose
parent dies (even by kill -9) is sent SIGTERM and ends too.
Nothing that starts threads (a PostgreSQL pool) may exist in the parent when it forks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

FAST_DEATH = 1.0
MAX_FAST_DEATHS = 5


def _end_with(parent: int) -> None:
    """In a worker: be sent SIGTERM when the parent dies (Linux's parent-death signal), so a
    supervisor killed outright (kill -9) leaves no worker serving the port on its own; the
    next supervisor's workers would share the port with it, running old code."""
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to ask for
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _spawn(index: int, work: Callable[[int], None]) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _end_with(parent)
        work(index)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # a worker's crash is reported, and its slot restarted
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_workers(count: int, work: Callable[[int], None],
                log: Callable[[str], None] = lambda _: None) -> int:
    """Run ``work(i)`` in ``count`` forked processes until a signal stops them; exit code."""
    stopping = False
    workers: dict[int, tuple[int, float]] = {}  # pid -> (index, started)

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    fast_deaths = 0
    try:
        for index in range(count):
            workers[_spawn(index, work)] = (index, time.monotonic())
        while workers:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            index, started = workers.pop(pid, (-1, 0.0))
            if stopping or index < 0:
                continue
            fast_deaths = fast_deaths + 1 if time.monotonic() - started < FAST_DEATH else 0
            how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit {os.WEXITSTATUS(status)}")
            if fast_deaths >= MAX_FAST_DEATHS:
                log(f"worker {index} keeps dying ({how}); stopping")
                stop(signal.SIGTERM, None)
                continue
            log(f"worker {index} (pid {pid}) ended ({how}); starting it again")
            workers[_spawn(index, work)] = (index, time.monotonic())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1 if fast_deaths >= MAX_FAST_DEATHS else 0
