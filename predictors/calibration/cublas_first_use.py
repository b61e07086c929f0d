"""cuBLAS's first use of a kernel in a process, and which kernel each Llama-3-8B GEMM shape runs (H200).

    python predictors/calibration/cublas_first_use.py --out FILE.json

Under serving, vLLM's eager steps sometimes block for the whole previous step inside a GEMM call
(predictors/data/h200/vllm_2026-12-01p: py-spy on `extern_kernels.mm` and the lm_head's linear; a CUPTI
recording showed a 140 ms cuKernelSetAttribute and cuLibraryLoadData calls during serving), while the same
GEMMs, once warmed, never block (gemm_host_block.json). The hypothesis: cuBLAS loads each of its kernels
lazily, on its first use in the process, and that load waits for the GPU's queued work.
  first_use: for new shapes (never run in this process), one call issued while the GPU is busy for 200 ms
             (host us: ~200000 if it waits), then the same shape again; and new shapes with the GPU idle
             (the load's own cost)
  kernels:   the kernel(s) each projection of the model (qkv, o, gate_up, down, lm_head) runs for token
             counts 1-8192 (torch.profiler), i.e. where cuBLAS switches kernels
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from gpu_helpers import LLAMA3_8B_LINEAR as PROJ, busy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w = {p: torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for p, (k, n) in PROJ.items()}
    xmax = {k: torch.randn(8192, k, device="cuda", dtype=torch.bfloat16) for k in {k for k, _ in PROJ.values()}}
    small = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.mm(small, small)      # cuBLAS's handle and its first kernel
    busy(1.0)
    torch.cuda.synchronize()

    def call(p: str, n: int) -> float:
        k, _ = PROJ[p]
        t = time.perf_counter_ns()
        torch.mm(xmax[k][:n], w[p].t())
        return (time.perf_counter_ns() - t) / 1e3

    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "first_use": [], "kernels": {}}
    # new shapes behind a busy GPU, then again
    for p, n in (("o", 6155), ("gate_up", 6155), ("down", 6155), ("qkv", 6155), ("lm_head", 11),
                 ("o", 3000), ("gate_up", 700), ("down", 1500), ("qkv", 900), ("lm_head", 37)):
        torch.cuda.synchronize()
        busy(200.0)
        first = call(p, n)
        torch.cuda.synchronize()
        busy(200.0)
        again = call(p, n)
        torch.cuda.synchronize()
        row = {"proj": p, "tokens": n, "gpu_busy": True, "first_us": round(first, 1), "again_us": round(again, 1)}
        out["first_use"].append(row)
        print(json.dumps(row), flush=True)
    # new shapes with the GPU idle
    for p, n in (("o", 5131), ("gate_up", 5131), ("down", 5131), ("qkv", 5131), ("lm_head", 5)):
        torch.cuda.synchronize()
        first = call(p, n)
        torch.cuda.synchronize()
        again = call(p, n)
        torch.cuda.synchronize()
        row = {"proj": p, "tokens": n, "gpu_busy": False, "first_us": round(first, 1), "again_us": round(again, 1)}
        out["first_use"].append(row)
        print(json.dumps(row), flush=True)
    # which kernels each shape runs
    ns = sorted(set([1, 2, 4] + list(range(8, 513, 8)) + list(range(576, 8193, 64)) + [6155, 3000, 700, 1500, 900, 5131]))
    from torch.profiler import ProfilerActivity, profile
    calls = [(p, n) for p in PROJ for n in ns if p != "lm_head" or n <= 1024]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for p, n in calls:
            call(p, n)
        torch.cuda.synchronize()
    mms = [e for e in prof.events() if e.name == "aten::mm"]
    for (p, n), e in zip(calls, mms):
        out["kernels"].setdefault(p, {})[n] = [k.name for k in e.kernels]
    print(len(calls), "calls,", len(mms), "aten::mm events", flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
