"""The host time of one call, as host_ops.py and inductor_host.py measure it: the time to enqueue a burst of
calls without synchronizing (perf_counter before and after, / calls; the burst is short enough that the GPU's
queue never fills, so the host never waits), median of several bursts, in microseconds. Imported by those
scripts from their own folder (Python puts a script's folder first on sys.path)."""
import statistics
import time

import torch


def host_us(fn, calls: int, bursts: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(bursts):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return round(statistics.median(per), 2)
