"""About N seconds of predicted GPU work, synchronized: the wall time is a fraction of it while
time.perf_counter() reports the virtual duration. Prints virtual and host (from /proc/uptime, which is not
virtualised) durations."""
import json
import sys
import time

import torch


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


target = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
a @ a  # warm-up: the first GEMM also creates cuBLAS's handle and workspace
torch.cuda.synchronize()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record()
for _ in range(10):
    a @ a
e1.record()
torch.cuda.synchronize()
per = e0.elapsed_time(e1) / 1e3 / 10
n = max(1, int(target / per))
w0, t0, r0 = uptime(), time.perf_counter(), time.time()
for _ in range(n):
    a @ a
torch.cuda.synchronize()
t1, r1, w1 = time.perf_counter(), time.time(), uptime()
print(json.dumps({"per_gemm_s": per, "n": n, "perf_counter_s": t1 - t0, "time_time_s": r1 - r0,
                  "wall_s": w1 - w0, "expected_s": n * per}))
