"""How many operations the host may queue on a busy GPU before a launch blocks, and what the block costs.

A launch returns at once while the stream's queue has room; once the GPU is that many operations behind,
the next launch waits (spinning, in the driver) until the GPU takes one more. This measures the depth, how
many slots an operation takes (cuBLAS GEMMs with a memset take two), and when host-to-device copies wait:

    python predictors/calibration/launch_queue.py --out FILE.json

For each kind of operation: keep the GPU busy for 300 ms (torch.cuda._sleep), issue N operations timing
each call, and report the index of the first call that took over 50 us, the host time per call before it,
the time per call after it, and the thread's CPU time over the loop (a spin counts as CPU). Mixed rows
interleave kinds, to tell whether the queue counts operations or bytes of their parameters.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from gpu_helpers import busy, graph_of_adds

BLOCK_NS = 50_000


def measure(name: str, ops: list, n: int, sleep_ms: float = 300.0) -> dict:
    for op in ops:          # warm: compile, allocate, load modules
        op()
    torch.cuda.synchronize()
    busy(sleep_ms)
    dts = []
    c0 = time.thread_time_ns()
    w0 = time.perf_counter_ns()
    for i in range(n):
        t = time.perf_counter_ns()
        ops[i % len(ops)]()
        dts.append(time.perf_counter_ns() - t)
    w1 = time.perf_counter_ns()
    c1 = time.thread_time_ns()
    torch.cuda.synchronize()
    first = next((i for i, d in enumerate(dts) if d > BLOCK_NS), None)
    before = dts[:first] if first else dts
    after = dts[first + 1:] if first is not None else []
    row = {"name": name, "n": n, "sleep_ms": sleep_ms, "first_block": first,
           "first_block_us": dts[first] / 1e3 if first is not None else None,
           "before_med_us": statistics.median(before) / 1e3 if before else None,
           "after_med_us": statistics.median(after) / 1e3 if after else None,
           "loop_wall_ms": (w1 - w0) / 1e6, "loop_cpu_ms": (c1 - c0) / 1e6,
           "slow_calls": sum(d > BLOCK_NS for d in dts)}
    # the call that waited longest (for the GPU's backlog to drain): its index is the queue's depth
    row["longest_at"] = max(range(n), key=dts.__getitem__)
    row["longest_us"] = dts[row["longest_at"]] / 1e3
    # the first few blocked calls, to see whether one call waits for the whole backlog or for one slot
    if first is not None:
        row["blocked_us_head"] = [round(d / 1e3, 1) for d in dts[first:first + 8]]
    print(json.dumps(row), flush=True)
    return row


def single(name: str, fn, sleep_ms: float = 100.0) -> dict:
    """One call issued while the GPU is busy: does it wait for the GPU?"""
    fn()
    torch.cuda.synchronize()
    busy(sleep_ms)
    time.sleep(0.005)
    t = time.perf_counter_ns()
    fn()
    dt = time.perf_counter_ns() - t
    torch.cuda.synchronize()
    row = {"name": name, "sleep_ms": sleep_ms, "call_us": dt / 1e3}
    print(json.dumps(row), flush=True)
    return row


def triton_rows(n: int) -> list:
    """Kernels with many parameters, as Inductor's are: does a launch take more of the queue?"""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return []

    @triton.jit
    def k2(a, b, N: tl.constexpr):
        i = tl.arange(0, N)
        tl.store(b + i, tl.load(a + i) + 1)

    @triton.jit
    def k16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, b, s0, s1, s2, s3, N: tl.constexpr):
        i = tl.arange(0, N)
        v = tl.load(a0 + i) + tl.load(a1 + i) + tl.load(a14 + i) + s0 + s1 + s2 + s3
        tl.store(b + i, v)

    xs = [torch.zeros(64, device="cuda") for _ in range(16)]
    return [measure("triton_2_args", [lambda: k2[(1,)](xs[0], xs[1], N=64)], n),
            measure("triton_20_args", [lambda: k16[(1,)](*xs, 1.0, 2.0, 3, 4, N=64)], n)]


def gemm_rows(n: int) -> list:
    """vLLM's eager GEMMs (Llama-3-8B projections at 768-8192 tokens): how many queue slots a call takes
    (cuBLAS adds a memset before some GEMMs, and launches its nvjet kernels with cluster attributes)."""
    rows = []
    for t, k, nn in ((768, 4096, 4096), (1024, 4096, 28672), (2048, 4096, 6144), (8192, 4096, 4096),
                     (8192, 4096, 28672), (8192, 14336, 4096)):
        a = torch.randn(t, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(nn, k, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(t, nn, device="cuda", dtype=torch.bfloat16)
        rows.append(measure(f"mm_{t}x{k}x{nn}", [lambda: torch.mm(a, w.t(), out=c)], min(n, 2500)))
        del a, w, c
    q = torch.randn(1, 32, 1024, 128, device="cuda", dtype=torch.bfloat16)
    rows.append(measure("sdpa_1024", [lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)],
                        min(n, 2500)))
    return rows


def copies() -> list:
    """Host-to-device copies from pageable memory behind a busy GPU: CUDA stages them through pinned
    buffers; whether a copy (or the n-th of many) waits for the stream is what vLLM's steps meet."""
    rows = []
    for size in (256, 4096, 65536, 1 << 20, 16 << 20):
        src = torch.ones(size // 4)
        pin = torch.ones(size // 4).pin_memory()
        dst = torch.zeros(size // 4, device="cuda")
        rows.append(single(f"h2d_pageable_nb_{size}", lambda: dst.copy_(src, non_blocking=True)))
        rows.append(single(f"h2d_pinned_nb_{size}", lambda: dst.copy_(pin, non_blocking=True)))
        rows.append(single(f"h2d_pageable_blocking_{size}", lambda: dst.copy_(src)))
    for size in (4096, 65536, 1 << 20):
        src = torch.ones(size // 4)
        dst = torch.zeros(size // 4, device="cuda")
        rows.append(measure(f"h2d_pageable_many_{size}", [lambda: dst.copy_(src, non_blocking=True)], 400,
                            sleep_ms=100.0))
    rows.append(single("torch_tensor_list_to_cuda", lambda: torch.tensor(list(range(64)), device="cuda")))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--copies-only", action="store_true")
    ap.add_argument("--gemm-only", action="store_true")
    a = ap.parse_args()
    if a.gemm_only:
        with open(a.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "rows": gemm_rows(a.n)}, f, indent=1)
        return
    if a.copies_only:
        with open(a.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "rows": copies()}, f, indent=1)
        return
    dev = "cuda"
    x = torch.zeros(1, device=dev)
    big = torch.zeros(1 << 20, device=dev, dtype=torch.bfloat16)
    parts = [torch.zeros(64, device=dev) for _ in range(64)]
    m = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    h = torch.zeros(256, pin_memory=True)
    d = torch.zeros(256, device=dev)
    q = torch.randn(1, 32, 128, 128, device=dev, dtype=torch.bfloat16)
    rows = []
    rows.append(measure("add_1", [lambda: x.add_(1)], a.n))
    rows.append(measure("add_1M_bf16", [lambda: big.add_(1)], a.n))
    rows.append(measure("cat_64", [lambda: torch.cat(parts)], a.n))                 # large kernel params
    rows.append(measure("mm_64", [lambda: torch.mm(m, m)], a.n))                    # cuBLAS
    rows.append(measure("sdpa", [lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q)], a.n))
    rows.append(measure("h2d_pinned_1KiB", [lambda: d.copy_(h, non_blocking=True)], a.n))
    rows.append(measure("event_record", [lambda: torch.cuda.Event().record()], a.n))
    rows.append(measure("add_then_cat", [lambda: x.add_(1), lambda: torch.cat(parts)], a.n))
    # a CUDA graph of 10 adds, replayed: does a replay take one slot or ten?
    g = graph_of_adds(x, 10)
    rows.append(measure("graph_10_adds", [g.replay], a.n // 2))
    # a longer busy period: does the depth stay the same (a count) when the backlog is older?
    rows.append(measure("add_1_sleep1000", [lambda: x.add_(1)], a.n, sleep_ms=1000.0))
    rows += triton_rows(a.n)
    rows += gemm_rows(a.n)
    rows += copies()
    info = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "rows": rows}
    with open(a.out, "w") as f:
        json.dump(info, f, indent=1)


if __name__ == "__main__":
    main()
