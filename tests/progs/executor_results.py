"""An event loop (uvloop's, as vLLM's API server runs) hands N pieces of work to a one-thread pool
(integrations/executor_clock.py installed, unless argv[1] == "off"), then falls behind in real time: it
spins, its clock's charging paused, until the pool has done them all (as a loop does when the machine
does not schedule it). It then takes the results one by one. Prints, per piece, the virtual time the pool
finished it and the virtual time the loop took its result, in ms from the start. (The loop's own clock
may still move while it lags: waiting for the GIL, it times out on the virtual clock.) Then, after an idle
spell, one more piece: the times it was handed over and finished."""
import asyncio
import ctypes
import hashlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import uvloop

if sys.argv[1:] != ["off"]:
    from timewarp.integrations import executor_clock
    assert executor_clock.install(), "executor_clock did not install (not under timewarp run?)"

N = 8
DATA = bytes(16 << 20)         # hashing 16 MiB: several ms of CPU, the GIL released
core = ctypes.CDLL(None)
pool = ThreadPoolExecutor(max_workers=1)
done = []
t0 = time.monotonic()


def work(k: int) -> float:
    hashlib.sha256(DATA).digest()
    t = (time.monotonic() - t0) * 1e3   # the pool thread's clock when the piece is done
    done.append(k)
    return t


async def main() -> None:
    loop = asyncio.get_running_loop()
    futs = [loop.run_in_executor(pool, work, k) for k in range(N)]
    core.tw_charge_pause()
    while len(done) < N:        # behind in real time, not in virtual time (a ctypes call lets the GIL go)
        core.tw_charge_pause()
        core.tw_charge_resume()
    core.tw_charge_resume()
    seen, finished = [], []
    for f in futs:
        finished.append(await f)
        seen.append((time.monotonic() - t0) * 1e3)
    # then an idle spell (a virtual sleep), and one more piece: it cannot start before it was handed over
    await asyncio.sleep(0.05)
    submitted = (time.monotonic() - t0) * 1e3
    late = await loop.run_in_executor(pool, work, N)
    print(json.dumps({"finished": finished, "seen": seen, "late_submitted": submitted, "late_finished": late}))


uvloop.run(main())
