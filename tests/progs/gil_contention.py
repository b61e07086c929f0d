"""Python's GIL between an event loop that computes and the one-thread pool it handed work to (uvloop, as
vLLM's API server tokenizes prompts while it streams tokens; integrations/executor_clock.py and
shim_c/core/gil.c). The loop hands N pieces of pure-Python work (1 ms of CPU each) to the pool, computes for
BUSY_MS without yielding, then waits for the results. Run with TIMEWARP_HOST_PACE=0 (CPU time charged as
measured). Prints the virtual ms (from the start) at which each piece started and ended, at which the loop's
computation ended, and the shim's counts (tw_gil_stats: GIL requests, real ms they waited, requests that
ran out of the real-time cap).

With the GIL modelled, the pool thread gets the GIL (to start a piece after waiting for it, and to return
each piece's result) only once the loop has computed a switch interval (5 ms) past its request, as CPython
forces a switch then; and the loop is pushed by the time the pieces held the GIL. With
TIMEWARP_GIL_MODEL=0 the pieces run as if they had a GIL of their own.

`gil_contention.py turns`: the loop computes the same time in 0.5-ms slices and yields between them
(`await asyncio.sleep(0)`). Each yield is a turn of the loop, whose poll lets the GIL go (uvloop runs libuv
without it), so the pool gets it at the next turn, within about a slice, not a switch interval later.

`gil_contention.py hold`: the loop sorts 2 M ints instead, in C, without letting CPython's forced switch in:
the pool thread, its GIL modelled and its clock its own, waits for the real GIL all that while, and must not
spin through timed-out waits doing so (pool_cpu_ms).

`gil_contention.py pool4`: a pool of four threads (as a loop's default executor), the loop idle: the four
pieces share one GIL, so they run one after another, not side by side (aiohttp's per-request netrc and proxy
lookups in `vllm bench serve`'s client), and the loop has all four results 4 ms after it handed them over
(done_ms). The model places the holds one after another as each piece ends, so a piece's own readings of the
clock stay those of its thread."""
import asyncio
import ctypes
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import uvloop

from timewarp.integrations import executor_clock

assert executor_clock.install(), "executor_clock did not install (not under timewarp run?)"
sys.setswitchinterval(0.005)
N, BUSY_MS = 4, 40.0
TURNS = sys.argv[1:] == ["turns"]
HOLD = sys.argv[1:] == ["hold"]
POOL4 = sys.argv[1:] == ["pool4"]
BIG = [(i * 7919) % 1000003 for i in range(2_000_000)] if HOLD else []
pool = ThreadPoolExecutor(max_workers=4 if POOL4 else 1)
t0 = time.monotonic()


def compute(ms: float) -> None:
    """Pure Python under the GIL for ms of this thread's CPU time, reading the (virtual) clock as it goes."""
    end = time.thread_time() + ms / 1e3
    x = 0
    while time.thread_time() < end:
        for i in range(100):
            x += i
        time.monotonic()


def piece(k: int) -> tuple[float, float, float]:
    start = (time.monotonic() - t0) * 1e3
    compute(1.0)
    return start, (time.monotonic() - t0) * 1e3, time.thread_time() * 1e3


async def main() -> None:
    global t0
    loop = asyncio.get_running_loop()
    # the pool's threads exist (their start-up is not measured)
    warm = max(await asyncio.gather(*(loop.run_in_executor(pool, piece, -1) for _ in range(4 if POOL4 else 1))))
    t0 = time.monotonic()
    futs = [loop.run_in_executor(pool, piece, k) for k in range(N)]
    if HOLD:
        # C code that holds the GIL without letting CPython's forced switch in (a sort of ints never returns
        # to the interpreter loop): the pool thread waits for the real GIL all that time
        sorted(BIG)
    elif POOL4:
        pass
    elif TURNS:
        for _ in range(int(BUSY_MS / 0.5)):
            compute(0.5)
            await asyncio.sleep(0)
    else:
        compute(BUSY_MS)
    busy_end = (time.monotonic() - t0) * 1e3
    pieces = [await f for f in futs]
    done = (time.monotonic() - t0) * 1e3   # the loop has taken every result
    stats = (ctypes.c_uint64 * 3)()
    ctypes.CDLL(None).tw_gil_stats(stats)
    # the pool thread's CPU time from the warm-up's end to the last piece's: its four pieces, and whatever its
    # waits for the GIL cost it
    pool_cpu = pieces[-1][2] - warm[2]
    print(json.dumps({"pieces": [p[:2] for p in pieces], "busy_end": busy_end, "takes": stats[0],
                      "waited_ms": stats[1] / 1e6, "capped": stats[2], "pool_cpu_ms": pool_cpu,
                      "done_ms": done}))


uvloop.run(main())
