"""What a recorder costs the program: host time per eager launch and per CUDA-graph replay, timed with
perf_counter over many calls (run it plain, under `timewarp record --shim` and under `timewarp record`).

    python3 predictors/calibration/record_cost.py [N]      -> one JSON line
"""
import json
import sys
import time

import torch

from gpu_helpers import graph_of_adds

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
x = torch.zeros(1, device="cuda")
w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
a = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
for _ in range(100):
    x.add_(1)
    a @ w
torch.cuda.synchronize()


def per_call(fn, k):
    t = time.perf_counter()
    for _ in range(k):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / k * 1e6


g = graph_of_adds(x, 10)
out = {"add_us": per_call(lambda: x.add_(1), n), "gemm_us": per_call(lambda: a @ w, n // 4),
       "graph10_us": per_call(g.replay, n // 10)}
print(json.dumps({k: round(v, 3) for k, v in out.items()}), flush=True)
