"""Work an event loop hands to a thread pool (`loop.run_in_executor`) keeps its own clock, and its result
reaches the loop at the virtual time it was produced.

Why: a process's threads share its clock (every reading is raised to the highest time any of its threads
reached: shim_c/core/vclock.c). vLLM's API server tokenizes each prompt in a one-thread pool while its event
loop goes on. On the real host the two run side by side, and a burst of 16 requests reaches the engine one
every ~2.5 ms, as each prompt's tokens come out of the pool. On the 2-core emulation host the pool's thread
often gets ahead of the loop in real time; the loop's readings were then raised to the pool thread's
latest time, so it took prompt 2 when prompt 15 was done: the burst reached the engine in two clumps 15-40
ms apart, and which engine step each request joined (its TTFT) changed from run to run.

How: the first time a pool thread runs such work it becomes a thread with its own clock (tw_clock_io_thread:
its readings are neither raised to nor raise the process's clock). Each piece of work is stamped with the
loop's time when it was handed over, and the pool thread is raised to it before it runs it (the work queue
carries no time of its own). The function's end time is noted, and
the coroutine that takes the result is raised to it (tw_clock_raise) as it takes it (_TimedFuture). The
pool's wake-up of the loop is an eventfd under uvloop, whose wait resumes at its first unseen signal
(shim_c/libc/message.c); asyncio's own loop wakes by a socket, at its latest write.
TIMEWARP_EXECUTOR_CLOCK=0 leaves pool threads on the process's clock.

Python's GIL (TIMEWARP_GIL_MODEL=0 turns it off): the pool's work runs Python, and while
the loop is busy the real pool thread waits for the GIL up to the switch interval (5 ms) (lease
vllm_2026-12-01t, case 14: 0.7 ms tokenizations took 6 ms once the loop streamed to 64 clients). A piece of
work takes the GIL on the process's timeline (tw_gil_take, shim_c/core/gil.c) where the real thread would ask
for it: to start, if the pool had been idle, and to return its result; and it hands it back (tw_gil_give),
which pushes the loop's clock by the busy time it displaced. The GIL is free where the loop's timeline is
idle and at each of the loop's polls (a turn of the loop: uvloop runs libuv without the GIL). Paired runs of
eleven vLLM cases put 7 within 5% on TTFT, TPOT and throughput with it and 1 without (docs/VLLM.md,
seventeenth session); with only the idle spells, a loop streaming to 256 clients looked busy for whole
switch intervals and 80% of case 8's tokenizations waited one, against 3-10% on the real host (eighteenth
session). The threads of a pool of several (a loop's default executor) share the one GIL too: gil.c places
their holds one after another. `vllm bench serve`'s aiohttp session (trust_env) runs a netrc and a proxy
lookup per request there, about 0.1 ms of Python: on the real host a burst of 128 requests waits for them
one by one, and emulated side by side the burst reached vLLM's API server 10-20 ms early (thirty-seventh
session, docs/VLLM.md).
Not covered: a pool thread keeps its own clock once it has run such work, so work later given to the same
pool with submit() and waited for with result() by another thread does not raise that thread (it resumes
at its process's clock); the work's own side effects (a queue it fills) carry no time either.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import sys
import threading

from .thread_clock import core as _lib

_local = threading.local()
_installed = False
_gil_model = False   # set by install(): the shim has gil.c and TIMEWARP_GIL_MODEL is not 0


def _timed(box: list, submitted: int, gil: bool, func, *args):
    core = _lib()
    if not getattr(_local, "own", False):
        core.tw_clock_io_thread()
        _local.own = True
    # The work cannot start before the loop handed it over. The pool thread's wake-up (the work queue's
    # lock, a wake from its own process) leaves an own-clock thread at its clock (shim_c/core/vclock.c),
    # which is where its previous work ended: without this raise, work queued after an idle spell ran in
    # the past and cost the loop nothing (vLLM's tokenization, 0.8-4 ms a prompt, was free).
    # With the GIL modelled: a pool thread that waited for this work (handed over after its previous piece
    # ended) must take the GIL to start it; one that had it queued goes on holding the GIL. Either way it
    # needs the GIL back to return the result after the work's native part, which let it go (a
    # tokenizer's encoding, a blocking call): lease t's contended tokenizations waited once, inside.
    idle_before = submitted > getattr(_local, "last_end", 0)
    core.tw_clock_raise(submitted)
    taken = (core.tw_gil_take(_switch_ns()) if idle_before else core.tw_now()) if gil else 0
    try:
        return func(*args)
    finally:
        if gil:
            core.tw_gil_give(taken)
            core.tw_gil_take(_switch_ns())
        _local.last_end = core.tw_now()
        box.append(_local.last_end)


def _switch_ns() -> int:
    return int(sys.getswitchinterval() * 1e9)


class _TimedFuture(asyncio.Future):
    """The loop's side of the pool's work: the coroutine that takes the result (await or result()) is
    raised to the time the pool finished it, at that moment. Raising when the result arrives instead
    (in a callback) raised the loop past results it had not taken yet: the loop runs every ready
    callback of an iteration before any coroutine resumes."""
    _tw_time = 0

    def _tw_raise(self) -> None:
        if self._tw_time:
            _lib().tw_clock_raise(self._tw_time)

    def result(self):
        r = super().result()
        self._tw_raise()
        return r

    def __await__(self):
        r = yield from super().__await__()   # the C future's iterator reads the result without result()
        self._tw_raise()
        return r

    __iter__ = __await__


def _wrap_run_in_executor(orig):
    def run_in_executor(self, executor, func, *args):
        if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
            return orig(self, executor, func, *args)
        box: list = []
        # a pool of several threads (the loop's default executor) shares the GIL among them too: gil.c
        # serializes their holds
        gil = _gil_model
        inner = orig(self, executor, _timed, box, _lib().tw_now(), gil, func, *args)
        outer = _TimedFuture(loop=self)

        def settle(f):
            if outer.done():
                return
            if box:
                outer._tw_time = box[-1]
            if f.cancelled():
                outer.cancel()
            elif f.exception() is not None:
                outer.set_exception(f.exception())
            else:
                outer.set_result(f.result())

        inner.add_done_callback(settle)
        outer.add_done_callback(lambda o: inner.cancel() if o.cancelled() else None)
        return outer

    run_in_executor._timewarp_executor_clock = True
    return run_in_executor


def _patch(cls) -> None:
    orig = cls.run_in_executor
    if not getattr(orig, "_timewarp_executor_clock", False):
        cls.run_in_executor = _wrap_run_in_executor(orig)


def install() -> bool:
    """Patch asyncio's and uvloop's run_in_executor (idempotent). False when turned off or not emulated."""
    global _installed
    if _installed:
        return True
    if os.environ.get("TIMEWARP_EXECUTOR_CLOCK") == "0":
        return False
    try:
        core = _lib()
        core.tw_clock_raise   # noqa: B018 - a shim without it (an older build): leave the program as it is
    except (OSError, AttributeError):
        return False
    global _gil_model
    try:
        core.tw_gil_take.restype = ctypes.c_uint64
        core.tw_gil_give.restype = None
        core.tw_gil_take.argtypes = [ctypes.c_uint64]
        core.tw_gil_give.argtypes = [ctypes.c_uint64]
        _gil_model = os.environ.get("TIMEWARP_GIL_MODEL") != "0"
    except AttributeError:
        _gil_model = False
    import asyncio.base_events
    _patch(asyncio.base_events.BaseEventLoop)
    try:
        import uvloop
        _patch(uvloop.Loop)
    except ImportError:
        pass
    _installed = True
    return True
