"""Fit the fused-MoE model (shim_c/core/moe.c, profile.c's `moemodel` row) to vLLM's Triton fused_moe_kernel
as measured on the real H200, and report its errors per model shape, held-out shapes apart.

    t = t0 + max(bytes / (eff_m * mem_bw), flops / (eff_c * peak_bf16))
    touched = E (1 - (1 - top_k / E)^tokens)     the experts the batch routes to (uniform routing), rounded
    padded  = ceil(tokens * top_k / touched / BLOCK_SIZE_M) * BLOCK_SIZE_M      rows per touched expert
    bytes   = 2 (touched N K + touched padded K + touched padded N)             bf16
    flops   = 2 touched padded N K

-> the profile row `moemodel <t0_ns> <eff_m> <eff_c>`. tokens, top_k are the launch's (the down projection's
launch has tokens x top_k rows and top_k 1, as vLLM calls it); BLOCK_SIZE_M is vLLM's config for the batch
(its tuned H200 file where vLLM ships one, else get_default_config), as the plugin passes it at run time.

Data: predictors/data/h200/moe_kernels_2026-12-04/moe_kernels.csv (predictors/calibration/moe_bench.py: five
public MoE shapes, 1-8192 tokens, CUPTI time of each launch). Held out (fixed): the whole of qwen3-30b-a3b and
olmoe-1b-7b, which the fit never sees. The fit: least squares of log(t) over (t0, eff_m, eff_c) on the fitted
shapes, on a grid (fit()).

    python -m timewarp.predictors.fit_moe [DATA_DIR]     # prints the row and the error table
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "h200" / "moe_kernels_2026-12-04"
HELD_OUT = ("qwen3-30b-a3b", "olmoe-1b-7b")


def block_m(tokens: int, experts: int, inter: int) -> int:
    """vLLM 0.24's BLOCK_SIZE_M for a bf16 fused MoE of this batch: its tuned H200 file (nearest batch key),
    else get_default_config's rule."""
    import importlib.util
    spec = importlib.util.find_spec("vllm")   # its files only: importing vLLM here is slow and needs no GPU
    if spec and spec.origin:
        f = (Path(spec.origin).parent / "model_executor" / "layers" / "fused_moe" / "configs" /
             f"E={experts},N={inter},device_name=NVIDIA_H200.json")
        if f.exists():
            cfg = json.loads(f.read_text())
            key = min(cfg, key=lambda k: abs(int(k) - tokens))
            return int(cfg[key]["BLOCK_SIZE_M"])
    return 16 if tokens <= 32 else 32 if tokens <= 96 else 64 if tokens <= 512 else 128


def features(tokens: float, top_k: int, experts: int, n: int, k: int, bm: int) -> tuple[float, float]:
    """(bytes, flops) of one launch, as moe.c computes them."""
    rows = tokens * top_k
    p = 1.0 if top_k >= experts else top_k / experts
    touched = min(experts * (1 - (1 - p) ** tokens), rows)
    t = min(max(int(touched + 0.5), 1), experts)
    padded = math.ceil(rows / t / bm) * bm
    return 2.0 * (t * n * k + t * padded * k + t * padded * n), 2.0 * t * padded * n * k


def launches(csv_path: Path):
    """One row per fused_moe_kernel launch: (shape, tokens, which, bytes, flops, measured_s)."""
    import pandas as pd
    d = pd.read_csv(csv_path)
    d = d[d.kernel == "fused_moe_kernel"].copy()
    d["which"] = d.groupby(["shape", "tokens"]).cumcount()
    out = []
    for r in d.itertuples():
        E, topk, H, inter, M = int(r.experts), int(r.top_k), int(r.hidden), int(r.intermediate), int(r.tokens)
        bm = block_m(M, E, inter)
        if r.which == 0:    # gate-up: [E, 2I, H], the batch's tokens each routed to top_k experts
            b, f = features(M, topk, E, 2 * inter, H, bm)
        else:               # down: [E, H, I], tokens x top_k rows each to one expert
            b, f = features(M * topk, 1, E, H, inter, bm)
        out.append((r.shape, M, int(r.which), b, f, r.median_us * 1e-6))
    return out


def _rates() -> tuple[float, float]:
    """(bf16 FLOP/s, memory bytes/s) as the C catalog serves them: the efficiencies are relative to these."""
    from .fit_attention import rates
    return rates("H200")


def model(coef, b, f):
    """t0 + max(bytes / (eff_m * bw), flops / (eff_c * peak)) at the catalog's H200 rates (profile.c's
    fitted_roofline); fit_gemm_align.py's floor has the same form."""
    t0, em, ec = coef
    peak, bw = _rates()
    return t0 + np.maximum(b / (em * bw), f / (ec * peak))


def grid_fit(b, f, y, t0_max: float, effs) -> tuple[float, float, float]:
    """(t0, eff_m, eff_c) of model() minimising the squared log error against the measured times y, on a grid:
    t0 by 0.1 us up to t0_max, both efficiencies over effs (of the catalog's rates, which are measured, not
    peaks): three coefficients, a few dozen launches, no optimiser needed."""
    peak, bw = _rates()
    b, f, y, effs = np.asarray(b), np.asarray(f), np.asarray(y), np.asarray(effs)
    tm = b[None, :] / (effs[:, None] * bw)        # [eff, launch]
    tc = f[None, :] / (effs[:, None] * peak)
    best = (np.inf, None)
    for t0 in np.arange(0, t0_max + 0.01e-6, 0.1e-6):
        t = t0 + np.maximum(tm[:, None, :], tc[None, :, :])          # [eff_m, eff_c, launch]
        loss = (np.log(t / y) ** 2).sum(-1)
        i = np.unravel_index(np.argmin(loss), loss.shape)
        if loss[i] < best[0]:
            best = (loss[i], (float(t0), float(effs[i[0]]), float(effs[i[1]])))
    return best[1]


def fit(rows) -> tuple[float, float, float]:
    """grid_fit over the launches: t0 up to 20 us, the efficiencies by 0.005 from 0.1 to 1.2."""
    return grid_fit([r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows], 20e-6,
                    np.arange(0.1, 1.2001, 0.005))


def report(rows, coef) -> list[str]:
    lines = ["| shape | split | launches | median abs err | p90 abs err | worst |", "|---|---|---|---|---|---|"]
    shapes = sorted({r[0] for r in rows}, key=lambda s: (s in HELD_OUT, s))
    allerr = {"fit": [], "held-out": []}
    for s in shapes:
        rs = [r for r in rows if r[0] == s]
        err = [float(model(coef, r[3], r[4]) / r[5] - 1) for r in rs]
        split = "held-out" if s in HELD_OUT else "fit"
        allerr[split] += err
        a = np.abs(err)
        w = rs[int(np.argmax(a))]
        lines.append(f"| {s} | {split} | {len(rs)} | {np.median(a) * 100:.1f}% | {np.percentile(a, 90) * 100:.1f}% | "
                     f"{max(err, key=abs) * 100:+.1f}% ({w[1]} tokens, {'gate-up' if w[2] == 0 else 'down'}) |")
    for split, e in allerr.items():
        if e:
            a = np.abs(e)
            lines.append(f"| all | {split} | {len(e)} | {np.median(a) * 100:.1f}% | {np.percentile(a, 90) * 100:.1f}% | |")
    return lines


def profile_row(data_dir: Path = DATA) -> str:
    rows = launches(data_dir / "moe_kernels.csv")
    t0, em, ec = fit([r for r in rows if r[0] not in HELD_OUT])
    return f"moemodel\t{t0 * 1e9:.6g}\t{em:.6g}\t{ec:.6g}"


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    rows = launches(data / "moe_kernels.csv")
    coef = fit([r for r in rows if r[0] not in HELD_OUT])
    peak, bw = _rates()
    print(f"moemodel\t{coef[0] * 1e9:.6g}\t{coef[1]:.6g}\t{coef[2]:.6g}   (t0 {coef[0] * 1e6:.2f} us, "
          f"eff_m {coef[1]:.3f} of {bw / 1e12:.1f} TB/s, eff_c {coef[2]:.3f} of {peak / 1e12:.0f} TFLOP/s)")
    print("\n".join(report(rows, coef)))


if __name__ == "__main__":
    main()
