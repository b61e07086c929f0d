"""Threads of one process that hand each other data through memory, on the virtual clock.

Data passed through a descriptor carries its writer's time (message stamps, shim_c/libc/message.c); data
passed through memory carries none. These helpers give it one where a program's timing depends on it:
- become_feeder(): the calling thread keeps its own clock (tw_clock_feeder_thread) and is a *feeder*: a
  thread that takes data from elsewhere (a socket) and hands it to its process's other threads;
- TimedQueue: a queue.Queue whose items carry the time they were put at; whoever takes one is raised to it
  (tw_clock_raise), as a reader woken by a message resumes at its stamp;
- idle_timers_private(): background threads that are not Python's no longer move the process's timeline
  when their timed waits run out (vLLM's idle EngineCore and its gloo socket loops);
- sync_inputs(): before a thread looks at what feeders may have queued for it without blocking (a busy
  loop's check between steps), it waits until neither a feeder of its process nor a thread of another
  process can still act before its time (tw_sync_inputs). A ctypes call: Python's GIL is released while
  it waits, so a feeder that needs the GIL can finish queueing.
Used by vLLM's EngineCore input thread (integrations/vllm_plugin/input_clock.py); usable by any program run
under timewarp (tests/progs/feeder_queue.py).
"""
from __future__ import annotations

import ctypes
import queue

_core = None


def core():
    """libtimewarp.so's clock functions (it is preloaded: its symbols are global)."""
    global _core
    if _core is None:
        c = ctypes.CDLL(None)
        c.tw_now.restype = ctypes.c_uint64
        c.tw_clock_raise.restype = ctypes.c_uint64
        c.tw_clock_raise.argtypes = [ctypes.c_uint64]
        c.tw_sync_inputs.restype = ctypes.c_int
        _core = c
    return _core


class _Stamped:
    __slots__ = ("item", "t")

    def __init__(self, item, t: int):
        self.item, self.t = item, t


class TimedQueue(queue.Queue):
    """queue.Queue whose items carry the virtual time they were put at; the taker is raised to it."""

    def _put(self, item):
        super()._put(_Stamped(item, core().tw_now()))

    def _get(self):
        x = super()._get()
        if not isinstance(x, _Stamped):   # put before the queue became a TimedQueue
            return x
        core().tw_clock_raise(x.t)
        return x.item

    def get(self, block=True, timeout=None):
        """A blocking get returns, at the item's time, once the feeders have queued what reached them by
        then (sync_inputs): a reader woken by the first item, that then drains without blocking (vLLM's
        idle EngineCore woken by a request), finds the others that arrived with it."""
        item = super().get(block, timeout)
        if block:
            sync_inputs()
        return item


def become_feeder() -> None:
    """The calling thread keeps its own clock and feeds its process through memory."""
    core().tw_clock_feeder_thread()


def idle_timers_private() -> None:
    """From now on, a timeout of a thread of this process that is not Python's (gloo's socket loops, NCCL's
    watchdogs) does not move the process's timeline (tw_clock_idle_timers_private): an idle process woken by
    a request takes it at the request's time, not at its background threads' last timeout."""
    core().tw_clock_idle_timers_private()


def sync_inputs() -> int:
    """Wait until no feeder of this process and no thread of another process can still act before this
    thread's time: 0 nothing to wait for, 1 waited, 2 the real-time cap (TIMEWARP_SYNC_INPUTS_US) ran out."""
    return core().tw_sync_inputs()
