"""aiohttp's request writes, started at once as on Python 3.12 (installed by timewarp's sitecustomize on 3.11).

Why: aiohttp (3.14) buffers a request's headers and writes them with the body from a task of its own. From
Python 3.12 on that task starts eagerly, inside `session.post(...)`: the request is on the wire before the
caller's next line. On 3.11 the task is only scheduled, so a burst of C requests started together (a client
at concurrency C: `vllm bench serve`, predictors/calibration/http_intake_bench.py) sends nothing until all C
have been started. The H200 host runs Python 3.12; this machine 3.11. Measured with the HTTP benchmark's
waves of 16 (predictors/data/h200/http_intake_2026-12-03, `intake_rounds.jsonl`): on the real host the
server took in the first request 0.26-0.38 ms after it was started, while the client was still starting the
others; emulated here, 1.56 ms, after the client had started all 16 (natively here also 1.58 ms). The
emulator prices the client's CPU, not its Python's scheduling, so the target's behaviour is restored here.

What it does: `aiohttp.client_reqrep` sees an `asyncio` whose `create_task` runs the coroutine's first step at
once (to its first suspension, as an eager task does) and then lets a task carry on from there. Only that
module is affected. TIMEWARP_AIOHTTP_EAGER=0 leaves aiohttp as it is.
"""
from __future__ import annotations

import asyncio
import sys
import types


def eager_task(coro, *, name=None, context=None):
    """What `asyncio.create_task(coro, eager_start=True)` does on 3.12, for 3.11: the coroutine runs now up to
    its first suspension; an already finished one gives a done future (aiohttp then drops it, as it drops a
    finished eager task)."""
    loop = asyncio.get_running_loop()
    try:
        yielded = coro.send(None) if context is None else context.run(coro.send, None)
    except StopIteration as done:
        fut = loop.create_future()
        fut.set_result(done.value)
        return fut
    except BaseException as e:  # noqa: BLE001 - the task's own exception, kept on its future
        fut = loop.create_future()
        fut.set_exception(e)
        return fut
    return loop.create_task(_resume(coro, yielded), name=name, context=context)


async def _resume(coro, yielded):
    """Drive coro on from a suspension, as a Task would: a future it yielded is waited for (without raising:
    the coroutine reads the outcome itself), a bare yield is one turn of the loop; a cancellation of this task
    is thrown into the coroutine."""
    while True:
        try:
            if yielded is None:
                await asyncio.sleep(0)
            else:
                yielded._asyncio_future_blocking = False
                await asyncio.wait((yielded,))
        except asyncio.CancelledError as e:
            try:
                yielded = coro.throw(e)
            except StopIteration as done:
                return done.value
            continue
        try:
            yielded = coro.send(None)
        except StopIteration as done:
            return done.value


class _AsyncioEager(types.ModuleType):
    """asyncio as aiohttp.client_reqrep sees it: everything asyncio's, but create_task eager."""

    def __getattr__(self, name):
        return eager_task if name == "create_task" else getattr(asyncio, name)


def install() -> None:
    """Point the imported aiohttp.client_reqrep at the eager asyncio (Python < 3.12 only)."""
    module = sys.modules.get("aiohttp.client_reqrep")
    if sys.version_info < (3, 12) and getattr(module, "asyncio", None) is asyncio:
        module.asyncio = _AsyncioEager("asyncio")
