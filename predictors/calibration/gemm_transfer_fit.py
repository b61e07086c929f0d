"""How a measured H200 GEMM time moves to another card: the rule of profile.c's transfer for GEMMs, checked on
the two cards' measurements.

A GEMM's measured time t on the profiled card is split into the share its operand bytes needed at a fraction F
of the catalog's copy bandwidth (memory), the share its FLOPs needed at the catalog's tensor rate (compute), and
the rest (SM-bound, moved with SMs x clock); each share moves with its own resource's ratio, and they add as
P-th powers. This script grids F and P over the bf16 GEMM graph rows measured on both the H200
(data/h200/gemm_cool_2026-12-03) and the H100 (data/h100/transfer_2026-12-05/mb_gemm), prints the error of the
predicted H100/H200 time ratio (median |error|, p90, and the median error by rows), and checks the chosen rule
on two sets no fit saw: nine other models' projection shapes measured on both cards (data/h200/gemm_models_2026-12-03
and data/h100/gemm_models_2026-12-06, 476 rows), and vLLM's own decode-step GEMMs, the kernels of case 3 (64
requests per decode step) in the vLLM profiler traces of both cards.

    python predictors/calibration/gemm_transfer_fit.py
"""
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"
CATALOG = Path(__file__).resolve().parents[1] / "catalog" / "gpus.toml"
H200_ROWS = DATA / "h200" / "gemm_cool_2026-12-03" / "gemm.parquet"
H100_ROWS = DATA / "h100" / "transfer_2026-12-05" / "mb_gemm" / "gemm.parquet"
H200_MODELS = DATA / "h200" / "gemm_models_2026-12-03" / "gemm.parquet"
H100_MODELS = DATA / "h100" / "gemm_models_2026-12-06" / "gemm.parquet"
H200_TRACE = DATA / "h200" / "vllm_2026-11-30e" / "prof_kernels_case3.csv.gz"
H100_TRACE = DATA / "h100" / "vllm_2026-12-06b" / "prof_kernels_case3.csv.gz"
ROW_BINS = [0, 8, 32, 64, 160, 600, np.inf]
CHOSEN = (4, 0.9)   # profile.c's TRANSFER_P_GEMM and GEMM_STREAM_FRACTION
# vLLM's decode-step GEMMs at 64 requests (Llama-3-8B shapes): (m, n, k, H200 kernels, H100 kernels), the
# kernels by name and grid as each card's cuBLAS chose them; a split-K kernel's reduce is part of its time
DECODE_GEMMS = {
    "gate_up": (64, 28672, 4096, ["nvjet_sm90_tst_256x64_64x5_4x1_v_bz_TNT 4x28x1"],
                ["nvjet_sm90_tst_224x64_64x5_2x1_v_bz_TNN 2x64x1"]),
    "down": (64, 4096, 14336, ["nvjet_sm90_tst_96x64_64x10_2x1_v_bz_splitK_TNN 2x66x1", "splitKreduce_kernel 128x4x1"],
             ["nvjet_sm90_tst_64x64_64x13_2x1_v_bz_splitK_TNT 2x64x1", "splitKreduce_kernel 128x4x1"]),
    "qkv": (64, 6144, 4096, ["nvjet_sm90_tst_64x64_64x13_4x1_v_bz_TNT 4x24x1"],
            ["nvjet_sm90_tst_48x64_64x15_2x1_v_bz_TNN 2x64x1"]),
    "o_proj": (64, 4096, 4096, ["nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT 2x64x1"],
               ["nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT 2x64x1"]),
    "lm_head": (64, 128256, 4096, ["nvjet_sm90_tst_512x64_64x2_2x1_v_bz_coopB_TNN 2x66x1"],
                ["nvjet_sm90_tst_512x64_64x2_2x1_v_bz_coopB_TNN 2x66x1"]),
}


def rates(gpu):
    r = tomllib.loads(CATALOG.read_text())["gpu"][gpu]["rates"]
    return float(r["hbm_bytes_per_s"]), float(r["bf16_flops"]), float(r.get("launch_floor_s", 2.5e-6))


def ratio(fm, fc, bw_ratio, flop_ratio, P, F):
    """transfer()'s ratio for memory share fm and compute share fc at bandwidth F x the catalog's (SMs x clock
    taken as equal, as they are on the H200 and H100)"""
    fm = np.minimum(1, np.asarray(fm) / F)
    fc = np.minimum(1, np.asarray(fc))
    wm, wc = fm ** P, fc ** P
    s = wm + wc
    wm, wc = np.where(s > 1, wm / s, wm), np.where(s > 1, wc / s, wc)
    rest = np.clip(1 - wm - wc, 0, None)
    return (rest + wm * bw_ratio ** P + wc * flop_ratio ** P) ** (1 / P)


def shares(m, n, k, seconds, bw, flops):
    return 2 * (m * k + k * n + m * n) / bw / seconds, 2 * m * n * k / flops / seconds


def roofline_ratio(m, n, k, src, dst):
    def roof(r):
        return np.maximum(2 * (m * k + k * n + m * n) / r[0], 2 * m * n * k / r[1]) + r[2]
    return roof(dst) / roof(src)


def pairs(dst_path, src_path):
    """bf16 graph rows measured on both cards, with the measured ratio, rows, and the H200 shares"""
    h200 = rates("H200")
    key = ["op", "dtype", "m", "n", "k", "batch", "tag", "mode"]
    d = pd.read_parquet(dst_path).merge(pd.read_parquet(src_path), on=key, suffixes=("_dst", "_src"))
    d = d[(d["mode"] == "graph") & (d.dtype == "bf16")].copy()
    d["measured"] = d.t_median_us_dst / d.t_median_us_src
    d["rows"] = d.m * d.batch
    d["fm"], d["fc"] = shares(d.m, d.n, d.k, d.t_median_us_src * 1e-6 / d.batch, h200[0], h200[1])
    return d


def table(title, d, rules):
    """one line per rule: its error on d's measured ratios, overall and by rows"""
    bins = pd.cut(d.rows, ROW_BINS)
    names = [f"{int(iv.left) + 1}-{iv.right:g}" for iv in bins.cat.categories]
    print(title)
    for label, predicted in rules:
        e = predicted / d.measured - 1
        by = " ".join(f"{nm}:{e[bins == iv].median() * 100:+.1f}" for nm, iv in zip(names, bins.cat.categories))
        print(f"  {label:16s} median |err| {e.abs().median() * 100:4.2f}%  p90 {e.abs().quantile(0.9) * 100:5.2f}%  "
              f"by rows {by}")


def main():
    h200, h100 = rates("H200"), rates("H100")
    bw_ratio, flop_ratio = h200[0] / h100[0], h200[1] / h100[1]
    d = pairs(H100_ROWS, H200_ROWS)
    grid = [("roofline ratio", roofline_ratio(d.rows, d.n, d.k, h200, h100))]
    grid += [(f"P={P} F={F}", ratio(d.fm, d.fc, bw_ratio, flop_ratio, P, F))
             for P in (2, 3, 4, 6) for F in (0.8, 0.85, 0.9, 0.95, 1.0)]
    table(f"{len(d)} bf16 GEMM graph rows measured on both cards (the grid); H100/H200 time ratio", d, grid)
    if H100_MODELS.exists():
        o = pairs(H100_MODELS, H200_MODELS)
        table(f"\nheld out: {len(o)} rows of nine other models' shapes ({o.tag.nunique()} models)", o,
              [("roofline ratio", roofline_ratio(o.rows, o.n, o.k, h200, h100)),
               ("P={} F={}".format(*CHOSEN), ratio(o.fm, o.fc, bw_ratio, flop_ratio, *CHOSEN))])

    def kernel_us(path, kernels):
        t = pd.read_csv(path)
        t = t[t.cat == "kernel"]
        t["key"] = t.name.str.replace(r"^void cublasLt::(splitKreduce_kernel).*", r"\1", regex=True) + " " + t.grid
        return sum(t[t.key.str.startswith(kn.split()[0]) & t.key.str.endswith(kn.split()[-1])].dur_us.median()
                   for kn in kernels)

    print("\nvLLM decode-step GEMMs at 64 requests (case 3's profiler traces; held out of the grid above):")
    tot = {"src": 0.0, "dst": 0.0, "rule": 0.0, "roof": 0.0}
    for name, (gm, gn, gk, src_k, dst_k) in DECODE_GEMMS.items():
        src, dst = kernel_us(H200_TRACE, src_k), kernel_us(H100_TRACE, dst_k)
        sm, sc = shares(gm, gn, gk, src * 1e-6, h200[0], h200[1])
        rule = float(ratio(sm, sc, bw_ratio, flop_ratio, *CHOSEN))
        roof = float(roofline_ratio(gm, gn, gk, h200, h100))
        print(f"  {name:8s} H200 {src:7.2f} us  H100 {dst:7.2f} us  measured {dst / src:.3f}  rule "
              f"{rule:.3f} ({(rule * src / dst - 1) * 100:+.1f}%)  roofline {roof:.3f} ({(roof * src / dst - 1) * 100:+.1f}%)")
        if name != "lm_head":
            for kk, v in (("src", src), ("dst", dst), ("rule", rule * src), ("roof", roof * src)):
                tot[kk] += v
    print(f"  one layer: measured {tot['dst'] / tot['src']:.3f}, rule {tot['rule'] / tot['src']:.3f} "
          f"({(tot['rule'] / tot['dst'] - 1) * 100:+.1f}%), roofline {tot['roof'] / tot['src']:.3f} "
          f"({(tot['roof'] / tot['dst'] - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
