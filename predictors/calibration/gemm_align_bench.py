"""cuBLAS bf16 GEMMs whose dimensions are not multiples of 8 elements, against their aligned neighbours, on a
real GPU: F.linear(x[M, K], W[N, K]) at N (or K) a few elements off a multiple of 8 and at that multiple,
for M from 1 to 8192 tokens. Such shapes make a 2-byte operand's or the output's rows start off a 16-byte
boundary. Inductor's pad_mm pass benchmarks exactly this choice (pad to the multiple, or not), and vLLM's
Qwen1.5-MoE router (N = 60 experts) is padded on the H200.

Each GEMM is timed as the mean over a CUDA graph of 20 back-to-back launches, replayed 5 times after a warm
replay, with CUDA events (median of the 5).

    python predictors/calibration/gemm_align_bench.py --out OUT_DIR    # writes OUT_DIR/gemm_align.csv
"""
from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 8192)
# (N, K) pairs: misaligned and aligned neighbours. Routers (60 and 64 experts), an odd vocabulary slice, and
# a misaligned reduction length.
SHAPES = ((60, 2048), (64, 2048), (56, 2048), (4092, 4096), (4096, 4096), (4096, 4092), (2052, 2048),
          (2048, 2048), (1, 2048), (8, 2048))


def time_us(fn, reps: int = 20) -> float:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    out = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, k in SHAPES:
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for m in TOKENS:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            us = time_us(lambda: F.linear(x, w))
            rows.append({"m": m, "n": n, "k": k, "us": round(us, 3)})
            print(f"M={m:5d} N={n:5d} K={k:5d}: {us:8.2f} us", flush=True)
    with open(a.out / "gemm_align.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} -> {a.out / 'gemm_align.csv'}")


if __name__ == "__main__":
    main()
