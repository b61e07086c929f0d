"""The EngineCore's input thread keeps its own clock, so that a request reaches the engine's busy loop at
the step boundary it reached in virtual time.

Why: vLLM's EngineCore takes requests off its ZMQ socket in a thread of its own (process_input_sockets:
poll, decode, preprocess, put on a queue.Queue) and its busy loop drains that queue between steps. Sharing
the process's clock, the input thread was always as late as the busy loop, so the time keeper never waited
for it: a GPU wait that ended past a request's arrival let the loop run on while the input thread, woken
in real time but short of the GIL on a loaded 2-core host, had not queued the request yet. On the real
H200 no request of cases 1, 2 and 6 missed the first step boundary after the API server sent it; emulated,
20 of 64 (case 2) and 18 of 32 (case 6) did, each joining a later prefill step (TTFT +7..+26% in case 6).

How: the thread becomes an own-clock thread (shim_c/core/vclock.c, tw_clock_feeder_thread), as libzmq's
I/O threads are: woken by a request, it resumes at the request's virtual time (message stamps,
shim_c/libc/message.c) and, until it blocks on its socket again, holds the time keeper's clock at its own,
so the busy loop's next GPU wait cannot end past it before the request is on the queue. Each request
goes on the queue with the input thread's time, and the busy loop is raised to it as it takes the request
(tw_clock_raise): an idle loop, blocked on the queue, would otherwise resume at its own earlier time.
Before a busy loop drains the queue (between steps), it waits, with the GIL released, until neither the input
thread nor another process can still act before its time (tw_sync_inputs): the input thread, woken in real
time but short of the GIL or of a CPU, has then queued what had reached it by that virtual time.
TIMEWARP_VLLM_INPUT_CLOCK=0 leaves it on the process's clock.
"""
from __future__ import annotations

import ctypes
import os
import queue

from ._hooks import wrap_method

_core = None


def _lib():
    global _core
    if _core is None:
        core = ctypes.CDLL(None)   # libtimewarp.so is preloaded: its symbols are global
        core.tw_now.restype = ctypes.c_uint64
        core.tw_clock_raise.restype = ctypes.c_uint64
        core.tw_clock_raise.argtypes = [ctypes.c_uint64]
        core.tw_sync_inputs.restype = ctypes.c_int
        _core = core
    return _core


class _Stamped:
    __slots__ = ("item", "t")

    def __init__(self, item, t: int):
        self.item, self.t = item, t


class TimedQueue(queue.Queue):
    """queue.Queue whose items carry the virtual time they were put at; the taker is raised to it."""

    def _put(self, item):
        super()._put(_Stamped(item, _lib().tw_now()))

    def _get(self):
        x = super()._get()
        if not isinstance(x, _Stamped):
            return x
        _lib().tw_clock_raise(x.t)
        return x.item


def become_feeder() -> None:
    """The calling thread keeps its own clock and feeds its process through memory (tw_clock_feeder_thread)."""
    _lib().tw_clock_feeder_thread()


def sync_inputs() -> int:
    """Wait until no feeder thread of this process and no other process can still act before this thread's
    time (tw_sync_inputs; a ctypes call, so the GIL is released meanwhile): 0 nothing to wait for, 1 waited,
    2 the real-time cap ran out."""
    return _lib().tw_sync_inputs()


def _make(orig):
    def process_input_sockets(self, *args, **kwargs):
        if type(self.input_queue) is queue.Queue:   # nothing is on it before this thread runs
            self.input_queue.__class__ = TimedQueue
        become_feeder()
        return orig(self, *args, **kwargs)
    return process_input_sockets


def _make_drain(orig):
    def _process_input_queue(self, *args, **kwargs):
        if self.has_work():   # busy: it will only look at the queue (idle, it blocks on it)
            sync_inputs()
        return orig(self, *args, **kwargs)
    return _process_input_queue


def install() -> None:
    if os.environ.get("TIMEWARP_VLLM_INPUT_CLOCK") == "0":
        return
    wrap_method("vllm.v1.engine.core", "EngineCoreProc", "process_input_sockets", _make, "_timewarp_input_clock")
    wrap_method("vllm.v1.engine.core", "EngineCoreProc", "_process_input_queue", _make_drain, "_timewarp_input_clock")
