"""vLLM's EngineCore input thread is a feeder (integrations/thread_clock.py), so that a request reaches the
engine's busy loop at the step boundary it reached in virtual time.

Why: the EngineCore takes requests off its ZMQ socket in a thread of its own (process_input_sockets: poll,
decode, preprocess, put on a queue.Queue) and its busy loop drains that queue between steps. Sharing the
process's clock, the input thread was dragged to the busy loop's time whenever it took the GIL, and
nothing made the busy loop wait for it: on the loaded 2-core host the thread, woken in real time but short
of the GIL, had often not queued a request that had reached it in virtual time. On the real H200 no
request of cases 1, 2, 4, 5 and 6 missed the first engine step after it reached the engine; emulated, 20 of
64 (case 2) and 18 of 32 (case 6) did, each joining a later prefill step.

How: the thread becomes a feeder (own clock: woken by a request, it resumes at the request's virtual time),
its queue becomes a TimedQueue (the busy loop is raised to each request's time as it takes it: an idle
loop, blocked on the queue, would otherwise resume at its own earlier time; woken so, it also waits for its
inputs before it drains the rest), and a busy loop waits for its inputs (sync_inputs) before it drains the
queue between steps. TIMEWARP_VLLM_INPUT_CLOCK=0 turns this off. With TIMEWARP_VLLM_IDLE_TIMERS=1, where the
engine holds the model's only rank, its gloo socket loops' timeouts are kept off its timeline
(thread_clock.idle_timers_private).
"""
from __future__ import annotations

import os
import queue

from ..thread_clock import TimedQueue, become_feeder, idle_timers_private, sync_inputs
from ._hooks import wrap_method


def _make(orig):
    def process_input_sockets(self, *args, **kwargs):
        if type(self.input_queue) is queue.Queue:   # nothing is on it before this thread runs
            self.input_queue.__class__ = TimedQueue
        become_feeder()
        # The engine's gloo socket loops time out every 10 ms; on its timeline, they raise an idle engine's
        # time, and it takes each request about 2 ms late (case 1: real 0.1 ms). Not by default: without that
        # delay, cases 1-6 came out further from the real H200 (docs/VLLM.md, twenty-second session). Only
        # where the engine holds the only rank: with peers (TP=2), vLLM's start-up hung with the rule in every
        # process (2 of 8 full test-suite runs; vclock.c, tw_tk_wake).
        parallel = getattr(getattr(self, "vllm_config", None), "parallel_config", None)
        if os.environ.get("TIMEWARP_VLLM_IDLE_TIMERS") == "1" and parallel is not None and \
                parallel.world_size_across_dp == 1:
            idle_timers_private()
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
