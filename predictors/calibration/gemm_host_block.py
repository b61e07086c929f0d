"""Does a cuBLAS GEMM call make the host wait for the GPU? vLLM's eager prefill steps (more tokens than the
largest CUDA graph) spend their blocked host time inside `extern_kernels.mm` (py-spy on the real H200,
predictors/data/h200/vllm_2026-12-01p), and a CUPTI recording showed one cuKernelSetAttribute call of 140 ms.

    python predictors/calibration/gemm_host_block.py --out FILE.json

A step is vLLM's eager Llama-3-8B layer stack for T tokens: per layer the qkv, o, gate_up and down
projections (bf16 torch.mm, as Inductor's extern_kernels.mm calls them) and two small elementwise
kernels. For each experiment the host time of every call is kept when it exceeds 200 us.
  alone:  one step of T tokens with the GPU idle (host ms, GPU ms)
  pairs:  a step of Ta tokens, then at once a step of Tb tokens: the second step's host time, and which of
          its calls waited (layer, projection, us)
  kernels: the kernel each projection runs at each T (torch.profiler), to tell which calls share a kernel
"""
from __future__ import annotations

import argparse
import json
import time

import torch

H, KV, FF = 4096, 1024, 14336
PROJ = {"qkv": (H, H + 2 * KV), "o": (H, H), "gate_up": (H, 2 * FF), "down": (FF, H)}
LAYERS = 32
SLOW_NS = 200_000


class Model:
    def __init__(self):
        self.w = {p: torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.01 for p, (k, n) in PROJ.items()}
        self.buf = {}

    def x(self, t: int, k: int) -> torch.Tensor:
        key = (t, k)
        if key not in self.buf:
            self.buf[key] = torch.randn(t, k, device="cuda", dtype=torch.bfloat16)
        return self.buf[key]

    def step(self, t: int, slow: list | None = None) -> float:
        """Issue one eager step; returns the host ms; appends (layer, proj, us) of slow calls to slow."""
        t0 = time.perf_counter_ns()
        for layer in range(LAYERS):
            for p, (k, n) in PROJ.items():
                a = self.x(t, k)
                c0 = time.perf_counter_ns()
                torch.mm(a, self.w[p].t())
                dt = time.perf_counter_ns() - c0
                if slow is not None and dt > SLOW_NS:
                    slow.append((layer, p, round(dt / 1e3, 1)))
                if p == "o":
                    a.add_(1)    # the residual add and norm: small kernels between the GEMMs
                    a.mul_(1)
        return (time.perf_counter_ns() - t0) / 1e6


def gpu_ms(m: Model, t: int) -> float:
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    m.step(t)
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", default="768,1024,2048,4096,8192")
    a = ap.parse_args()
    ts = [int(x) for x in a.tokens.split(",")]
    m = Model()
    for t in ts:            # warm: allocations, cuBLAS handles and heuristics, module loading
        m.step(t)
    torch.cuda.synchronize()
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "alone": [], "pairs": [],
           "kernels": {}}
    for t in ts:
        for _ in range(3):
            torch.cuda.synchronize()
            slow = []
            host = m.step(t, slow)
            torch.cuda.synchronize()
            out["alone"].append({"tokens": t, "host_ms": round(host, 3), "gpu_ms": round(gpu_ms(m, t), 3),
                                 "slow": slow[:40], "n_slow": len(slow)})
            print(json.dumps({k: v for k, v in out["alone"][-1].items() if k != "slow"}), flush=True)
    for ta in ts:
        for tb in ts:
            torch.cuda.synchronize()
            m.step(ta)
            slow = []
            host = m.step(tb, slow)
            torch.cuda.synchronize()
            out["pairs"].append({"first": ta, "second": tb, "host_ms": round(host, 3), "slow": slow[:40],
                                 "n_slow": len(slow)})
            print(json.dumps({k: v for k, v in out["pairs"][-1].items() if k != "slow"}), flush=True)
    # which kernel each projection runs
    from torch.profiler import ProfilerActivity, profile
    for t in ts:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for p, (k, n) in PROJ.items():
                torch.mm(m.x(t, k), m.w[p].t())
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        out["kernels"][str(t)] = names
    print(json.dumps(out["kernels"]), flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
