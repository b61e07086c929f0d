"""A thread with its own clock, woken by its own process (a lock the main thread releases), keeps its clock
(shim_c/core/vclock.c, tw_tk_wake: TW_WAKE_LOCAL); a thread on the process's clock resumes at the
process's time. The main thread holds a lock, runs about 20 virtual ms of GPU work, and releases it; two
threads wait on the lock in turn, one made a feeder (integrations/thread_clock.py) first. Prints, in ms
from the start, when each began waiting, when each got the lock and when the main thread released it."""
import json
import threading
import time

import torch
from timewarp.integrations.thread_clock import become_feeder

t0 = time.monotonic()
ms = lambda: (time.monotonic() - t0) * 1e3   # noqa: E731
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
out = {}


def waiter(name: str, lock: threading.Lock, ready: threading.Event, own: bool) -> None:
    if own:
        become_feeder()
    out[name + "_wait"] = ms()
    ready.set()
    with lock:
        out[name + "_got"] = ms()


for name, own in (("own", True), ("shared", False)):
    lock, ready = threading.Lock(), threading.Event()
    lock.acquire()
    th = threading.Thread(target=waiter, args=(name, lock, ready, own))
    th.start()
    ready.wait()
    time.sleep(0.001)                   # the waiter is blocked on the lock by now
    for _ in range(12):                 # ~20 virtual ms of GPU work, waited for
        y = x @ x
    torch.cuda.synchronize()
    out[name + "_released"] = ms()
    lock.release()
    th.join()
print(json.dumps(out))
