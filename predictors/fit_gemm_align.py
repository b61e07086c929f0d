"""Fit the floor the C core puts under cuBLAS GEMMs whose rows do not start on 16-byte boundaries (profile.c,
row `gemmalign`), from predictors/data/h200/gemm_align_2026-12-04 (predictors/calibration/gemm_align_bench.py).

On the H200, F.linear with an output or reduction dimension a few elements off a multiple of 8 (bf16) runs
cuBLAS kernels 2-4x slower than at the multiple from about 256 tokens up (N = 4092 against 4096 at 8192
tokens: 977 us against 376; N = 60 against 64 experts: 21.0 us against 9.0), while one token takes the GEMV
path either way. Such a launch's time is the larger of its usual prediction and

    t0 + max(bytes / (eff_m * mem_bw), flops / (eff_c * peak_bf16))

with bytes and flops as the C core computes them for the launch. Fitted on N = 4092 (K 4096) and N = 2052
(K 2048); N = 60 (K 2048) and K = 4092 (N 4096) held out. Tokens 2 and more (one token: GEMV, no penalty).

    python -m timewarp.predictors.fit_gemm_align     # prints the row and the errors
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .fit_moe import grid_fit, model

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "h200" / "gemm_align_2026-12-04" / "gemm_align.csv"
FIT = ((4092, 4096), (2052, 2048))
HELD_OUT = ((60, 2048), (4096, 4092))


def rows(path: Path = DATA):
    """(n_out, k, tokens, bytes, flops, measured_s) of the misaligned launches with 2 tokens or more."""
    out = []
    for r in csv.DictReader(open(path)):
        n, k, m = int(r["n"]), int(r["k"]), int(r["m"])
        if m < 2 or (n % 8 == 0 and k % 8 == 0):
            continue
        out.append((n, k, m, 2.0 * (n * k + k * m + n * m), 2.0 * n * m * k, float(r["us"]) * 1e-6))
    return out


def fit(rs) -> tuple[float, float, float]:
    """fit_moe.grid_fit: t0 at most an aligned launch's floor (5 us: the rest is work), the efficiencies by
    0.005 from 0.05 to 1."""
    return grid_fit([r[3] for r in rs], [r[4] for r in rs], [r[5] for r in rs], 5e-6, np.arange(0.05, 1.0001, 0.005))


def profile_row(path: Path = DATA) -> str:
    t0, em, ec = fit([r for r in rows(path) if (r[0], r[1]) in FIT])
    return f"gemmalign\t{t0 * 1e9:.6g}\t{em:.6g}\t{ec:.6g}"


def main() -> None:
    rs = rows()
    coef = fit([r for r in rs if (r[0], r[1]) in FIT])
    print(f"gemmalign\t{coef[0] * 1e9:.6g}\t{coef[1]:.6g}\t{coef[2]:.6g}")
    print("| N | K | split | launches | median abs err | worst |\n|---|---|---|---|---|---|")
    for shape in FIT + HELD_OUT:
        sel = [r for r in rs if (r[0], r[1]) == shape]
        err = [float(model(coef, r[3], r[4]) / r[5] - 1) for r in sel]
        worst = max(zip(err, sel), key=lambda e: abs(e[0]))
        print(f"| {shape[0]} | {shape[1]} | {'fit' if shape in FIT else 'held-out'} | {len(sel)} | "
              f"{np.median(np.abs(err)) * 100:.1f}% | {worst[0] * 100:+.1f}% ({worst[1][2]} tokens) |")


if __name__ == "__main__":
    main()
