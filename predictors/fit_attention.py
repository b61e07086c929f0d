"""Fit the coefficients of step.c's attention model (vLLM's FlashAttention-3 main kernel, timed per step from
the requests' query and context lengths) on the real H200, and report its errors:

    t = t0 + per_tile * tiles + flops / (eff_c * peak_bf16) + bytes / (eff_m * mem_bw)
    flops = 4 * heads * head_dim * sum_i (q_i * (k_i - q_i) + q_i * (q_i + 1) / 2)
    bytes = 2 * head_dim * (2 * sum_k * kv_heads + 2 * sum_q * heads)
    tiles = kv_heads * sum_i ceil(q_i * heads / kv_heads / 128)

-> the profile row `attnstep <t0_ns> <eff_c> <eff_m> <per_tile_ns>`. peak_bf16 and mem_bw are the catalog's H200
rates (bf16_flops, hbm_bytes_per_s: what the C catalog serves). heads=32, kv_heads=8, head_dim=128 (Llama-3-8B).

Data: vllm_kernels_2026-11-30/attention.csv (predictors/calibration/vllm_attention_bench.py): the per-call GPU
time of vLLM 0.24.0's FA3 call inside a CUDA graph (`timing == graph`: no launch gaps), for the (case,
variant) that vLLM's default configuration runs (`vllm_default == 1` in either timing: for decode that is the
graph row itself, maxsplits32; for prefill and mixed batches the default row is the eager one, since vLLM runs
them piecewise, and its device time is the graph row of the same variant).

What is fitted: a call is the main kernel (FlashAttnFwdSm90, step-timed) plus one more kernel, each followed
by a launch gap: FA3's combine kernel (maxsplits32 always launches it; maxsplits0 when it split) or, with one
split and no combine, a one-block fill (the tile semaphore reset). attention.csv has only call totals; the
emulator prices that other kernel from the profile's kern rows (the vLLM recording; profile_build.KernTable
is profile.c's lookup) plus kgap. The main kernel is fitted to the call minus that prediction, so that the
emulated call total (step model + kern row + kgap) matches the measured one; errors are reported for both the
main kernel (against call - other) and the call total. The real combine time depends on the splits FA3 chose
on the device (1.3 us for a short-context decode, 3 us with splits, up to 17 us for 512 decodes), which a
kern row keyed by grid cannot see: where its kern row is off, the main kernel's target absorbs the error, so
the fit is robust (Huber weights on the relative residual, IRLS) rather than plain least squares.

Held out (fixed; profile_build.is_held_out("attnstep", row), the single definition): a case whose crc32 of
case_id is odd. Errors are |predicted - measured| / measured, median and p90, per kind (decode / prefill /
mixed) and split.

Check against vLLM itself: kernels.parquet of the same directory has the FA3 main kernel's own duration in a
real vLLM run (predictors/calibration/vllm_workload.py under integrations/record.py). Its `decode` phase
(B requests of 64 prompt tokens, 16 output tokens: uniform decode steps with k = 64 + step) and `prefill`
phase (one request, q = k = prompt length) have known shapes; `--vllm-check` prints the model against them.

    python -m timewarp.predictors.fit_attention [--vllm-check] [--csv ERRORS.csv]
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
import sys
from dataclasses import dataclass

from . import profile_build as pb

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
TILE_ROWS = 128                      # FA3 sm90 hdim128 query tile (kBlockM), GQA-packed rows
ATTENTION_CSV = pb.VLLM_DIR / "attention.csv"
KERNELS_JSON = pb.VLLM_DIR / "kernels.json"
COMBINE_BLOCK = (256, 1, 1)


def rates(gpu: str = "H200") -> tuple[float, float]:
    """(peak_bf16 FLOP/s, memory bytes/s) as the C catalog serves them (predictors/gen_catalog.py)."""
    from . import catalog

    r = catalog.get(gpu).rates
    return float(r["bf16_flops"]), float(r["hbm_bytes_per_s"])


def features(q, k, heads: int = HEADS, kv_heads: int = KV_HEADS, head_dim: int = HEAD_DIM) -> dict:
    """What step.c's tw_step_set accumulates, for one step (lists of per-request query and context lengths)."""
    group = heads / kv_heads
    sum_q = sum_k = pairs = tiles = 0.0
    for qi, ki in zip(q, k):
        qi = max(float(qi), 0.0)
        ki = max(float(ki), qi)
        sum_q += qi
        sum_k += ki
        pairs += qi * (ki - qi) + qi * (qi + 1) / 2
        tiles += kv_heads * math.ceil(qi * group / TILE_ROWS)
    return {"nreq": len(q), "sum_q": sum_q, "sum_k": sum_k, "pairs": pairs, "tiles": tiles,
            "flops": 4 * heads * head_dim * pairs,
            "bytes": 2.0 * head_dim * (2 * sum_k * kv_heads + 2 * sum_q * heads)}


def predict_ns(coef, f: dict, peak: float, bw: float) -> float:
    """step.c's tw_step_predict_s, in ns. coef = (t0_ns, eff_c, eff_m, per_tile_ns)."""
    t0, eff_c, eff_m, per_tile = coef
    return t0 + per_tile * f["tiles"] + f["flops"] / (eff_c * peak) * 1e9 + f["bytes"] / (eff_m * bw) * 1e9


def _other_kernels() -> dict:
    """The call's other kernels as kernels.json (torch.profiler around a few calls) names them."""
    kj = json.loads(KERNELS_JSON.read_text())
    out = {}
    for cases in kj["variants"].values():
        for case in cases.values():
            for x in case.get("attention_call", []):
                if "FlashAttnFwdCombine" in x["name"]:
                    out["combine"] = x["name"]
                elif "FillFunctor" in x["name"]:
                    out["fill"] = (x["name"], tuple(x["grid"]), tuple(x["block"]))
    return out


def combine_grid(q) -> tuple[int, int, int]:
    """FA3's combine grid for a varlen call, as the vLLM recording shows it: one block per 8 rows of
    (query, head) plus one per request when there are several (decode B: 5B blocks; one prompt of L: 4L)."""
    blocks = math.ceil(sum(q) * HEADS / 8) + (len(q) if len(q) > 1 else 0)
    return (blocks, 1, 1)


def bench_rows(kern=None):
    """The fit data: one row per (case, variant) vLLM's default runs, graph-timed, with features, the call
    time, the emulator's price of the call's other kernel (`other_ns`, kern row + kgap) and held_out."""
    import pandas as pd

    a = pd.read_csv(ATTENTION_CSV)
    default = a[a.vllm_default == 1][["case_id", "variant"]].drop_duplicates()
    g = a[a.timing == "graph"].merge(default, on=["case_id", "variant"])
    g = g[g.us_median.notna()]
    if kern is None:
        kern = pb.KernTable(pb.kern_table(), pb.kernel_gap_ns())
    names = _other_kernels()
    rows = []
    for r in g.itertuples():
        q = [int(x) for x in str(r.q_lens).split(";")]
        k = [int(x) for x in str(r.k_lens).split(";")]
        if r.variant == "maxsplits32" or r.num_splits > 1:
            other, how = kern.predict_ns(names["combine"], combine_grid(q), COMBINE_BLOCK)
        else:
            other, how = kern.predict_ns(*names["fill"])
        rows.append({"case_id": r.case_id, "kind": r.kind, "variant": r.variant, "num_splits": r.num_splits,
                     **features(q, k), "call_ns": r.us_median * 1e3, "other_ns": other or 0.0,
                     "other_layer": how, "held_out": pb.is_held_out("attnstep", r)})
    d = pd.DataFrame(rows)
    return d.assign(y_ns=d.call_ns - d.other_ns)


@dataclass
class Fit:
    coef: tuple          # t0_ns, eff_c, eff_m, per_tile_ns
    rows: object         # bench_rows() with pred_ns, err_main, err_call


def _solve(d, peak, bw, robust=True, iters=50, huber=1.5):
    """Weighted least squares of y on [1, tiles, flops/peak, bytes/bw] with weights 1/y (relative error);
    with robust, Huber weights on the relative residuals (IRLS)."""
    import numpy as np

    y = d.y_ns.to_numpy(float)
    A = np.c_[np.ones(len(d)), d.tiles, d.flops / peak * 1e9, d.bytes / bw * 1e9]
    w = 1 / y
    c = None
    for _ in range(iters if robust else 1):
        c, *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
        r = (A @ c - y) / y
        s = 1.4826 * np.median(np.abs(r - np.median(r))) or 1e-9
        u = np.abs(r) / (huber * s)
        w = (1 / y) * np.where(u <= 1, 1.0, 1 / np.maximum(u, 1e-12))
    return (float(c[0]), float(1 / c[2]), float(1 / c[3]), float(c[1]))


def fit(gpu: str = "H200") -> Fit:
    peak, bw = rates(gpu)
    d = bench_rows()
    coef = _solve(d[~d.held_out], peak, bw)
    pred = [predict_ns(coef, r, peak, bw) for r in d.to_dict("records")]
    d = d.assign(pred_ns=pred)
    d = d.assign(err_main=(d.pred_ns - d.y_ns) / d.y_ns, err_call=(d.pred_ns + d.other_ns - d.call_ns) / d.call_ns)
    return Fit(coef, d)


def summary(d, by=("kind", "held_out")):
    import numpy as np

    out = []
    for key, g in d.groupby(list(by)):
        em, ec = g.err_main.abs(), g.err_call.abs()
        out.append((*key, len(g), em.median(), np.quantile(em, 0.9), ec.median(), np.quantile(ec, 0.9),
                    g.err_call.median()))
    return out


def format_summary(d) -> str:
    lines = [f"{'kind':8s} {'rows':9s} {'n':>4s}  {'main median':>11s} {'p90':>6s}  {'call median':>11s} {'p90':>6s} "
             f"{'bias':>6s}"]
    for kind, held, n, mm, m90, cm, c90, bias in summary(d):
        lines.append(f"{kind:8s} {'held-out' if held else 'fit':9s} {n:4d}  {mm * 100:10.1f}% {m90 * 100:5.1f}%  "
                     f"{cm * 100:10.1f}% {c90 * 100:5.1f}% {bias * 100:+5.1f}%")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ check in vLLM
def vllm_steps(paths=None):
    """Steps of the vLLM recording whose shapes are known, with the FA3 main kernel's median duration over
    the step's layers: `decode` phase steps where all B requests decode (the combine grid says so), with
    k = 64 + the step's index in its case, and `prefill` phase steps (one request, q = k = prompt)."""
    import pandas as pd

    paths = paths or pb.VLLM_KERNELS
    cols = ["kind", "name", "grid_x", "grid_z", "start_ns", "dur_ns", "launch_api", "label_stack"]
    k = pd.concat([pd.read_parquet(p, columns=cols) for p in paths if p.exists()], ignore_index=True)
    k = k[k.kind == "kernel"].sort_values("start_ns", kind="stable").reset_index(drop=True)
    k = k.assign(step=k.name.str.contains("_gumbel_sample_kernel").cumsum().shift(fill_value=0),
                 case=k.label_stack.str.extract(r'"(phase:[^"|]*\|B=[^"]*)"')[0])
    main = k[k.name.str.contains("FlashAttnFwdSm90")]
    comb = k[k.name.str.contains("FlashAttnFwdCombine")]
    steps = main.groupby("step").agg(case=("case", "first"), n=("dur_ns", "size"), dur_ns=("dur_ns", "median"))
    steps = steps.join(comb.groupby("step").agg(cgrid=("grid_x", "median"), cz=("grid_z", "median")))
    steps = steps[steps.case.notna()].reset_index()
    steps = steps.assign(idx=steps.groupby("case").cumcount())
    rows = []
    for s in steps.itertuples():
        m = re.match(r"phase:(\w+)\|B=(\d+)\|in=(\d+)", s.case)
        if not m:
            continue
        phase, b, n_in = m.group(1), int(m.group(2)), int(m.group(3))
        if phase == "decode":
            nreq = s.cz if s.cgrid == 4 else s.cgrid / 5
            if s.idx == 0 or nreq != b:
                continue
            q, kk = [1] * b, [n_in + s.idx] * b
        elif phase == "prefill":
            q, kk = [n_in], [n_in]
        else:
            continue
        rows.append({"case": s.case, "phase": phase, "B": b, "in": n_in, "dur_ns": s.dur_ns, **features(q, kk)})
    return pd.DataFrame(rows)


def vllm_check(coef, gpu: str = "H200"):
    peak, bw = rates(gpu)
    v = vllm_steps()
    v = v.assign(pred_ns=[predict_ns(coef, r, peak, bw) for r in v.to_dict("records")])
    return v.assign(err=(v.pred_ns - v.dur_ns) / v.dur_ns)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", default="H200")
    ap.add_argument("--vllm-check", action="store_true", help="compare with the FA3 kernels of the real vLLM run")
    ap.add_argument("--csv", help="write the per-case errors here")
    args = ap.parse_args(argv)
    f = fit(args.gpu)
    t0, ec, em, pt = f.coef
    print(f"attnstep\t{t0:.6g}\t{ec:.6g}\t{em:.6g}\t{pt:.6g}   (t0 {t0 / 1e3:.2f} us, eff_c {ec:.3f} of "
          f"{rates(args.gpu)[0] / 1e12:.0f} TFLOP/s, eff_m {em:.3f} of {rates(args.gpu)[1] / 1e12:.1f} TB/s, "
          f"{pt:.1f} ns per tile)")
    print("errors |pred - real| / real; main: the FA3 main kernel against call - other kernel; call: the whole call")
    print(format_summary(f.rows))
    if args.csv:
        f.rows.to_csv(args.csv, index=False)
    if args.vllm_check:
        import numpy as np

        v = vllm_check(f.coef, args.gpu)
        print("\nin vLLM (kernels.parquet, the FA3 main kernel's own duration; model as fitted above):")
        for (phase, b), g in v.groupby(["phase", v.B.where(v.phase == "decode", v["in"])]):
            print(f"  {phase:8s} {'B' if phase == 'decode' else 'in'}={b:<5d} steps {len(g):3d}  real "
                  f"{g.dur_ns.median() / 1e3:8.1f} us  model {g.pred_ns.median() / 1e3:8.1f} us  "
                  f"err {g.err.median() * 100:+6.1f}%")
        for phase, g in v.groupby("phase"):
            print(f"  {phase}: median err {g.err.median() * 100:+.1f}%, median |err| {g.err.abs().median() * 100:.1f}%,"
                  f" p90 |err| {np.quantile(g.err.abs(), 0.9) * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
