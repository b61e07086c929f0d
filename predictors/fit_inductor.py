"""Fit the model the C core times Inductor's Triton kernels by when the profile has no rows for them (profile.c,
row `inductormodel`): another model's fusions (a bias add, a q/k norm, another activation) get a name no
recording holds. kernel.c reads each launch's extents (xnumel, r0_numel) and its tensor arguments from the
launch; the model is

    t0 + bytes / (eff_m * mem_bw),   bytes = 2 x tensor arguments x xnumel x r0_numel

(model.c: every tensor read or written once over the extent as bf16), fitted on the Inductor launches of the
models whose kernels the profile holds (their recorded times joined with the extents read under emulation:
predictors/data/h200/inductor_launches_2026-12-04). Split: fitted on the Llama-3-8B shape's launches (bf16 and
fp8 linears); the Qwen1.5-MoE shape's are held out. The models the profile lacks (Qwen3-30B-A3B, Llama-3.2-3B,
Qwen2.5-32B shapes) are the check that matters: compare_vllm_steps against their recordings.

    python -m timewarp.predictors.fit_inductor                     # the row and the errors
    python -m timewarp.predictors.fit_inductor collect OUT.csv MODEL=T.json ...   # rebuild the launches table
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

from .fit_moe import grid_fit, model

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "h200" / "inductor_launches_2026-12-04" / "launches.csv"
FIT_MODELS = ("llama3-8b", "llama3-8b-fp8")
HELD_OUT_MODELS = ("qwen1.5-moe",)
BYTES_PER_ELEMENT = 2.0   # model.c's INDUCTOR_BYTES


def collect(out: Path, traces: dict[str, Path]) -> int:
    """The Inductor launches of emulated traces (`timewarp run --trace`) that took a measured row (layer
    exact: the recorded time, kgap included, as the C core serves it), one per (model, kernel, grid, block,
    extents): written to out. Returns how many."""
    seen = {}
    for name, path in traces.items():
        for e in json.loads(Path(path).read_text())["traceEvents"]:
            a = e.get("args", {})
            if not e["name"].startswith("triton_") or not a.get("ptr_args") or a.get("layer") != "exact":
                continue
            key = (name, e["name"], a["grid"][0], a["block"][0], a["rows"][0], a["rows"][1])
            seen[key] = (a["ptr_args"], e["dur"])
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "kernel", "grid", "block", "xnumel", "r0_numel", "ptr_args", "us"])
        for k, (p, us) in sorted(seen.items()):
            w.writerow([*k, p, f"{us:.3f}"])
    return len(seen)


def rows(path: Path = DATA):
    """(model, kernel, bytes, measured_s) of each launch."""
    return [(r["model"], r["kernel"],
             BYTES_PER_ELEMENT * int(r["ptr_args"]) * int(r["xnumel"]) * int(r["r0_numel"]), float(r["us"]) * 1e-6)
            for r in csv.DictReader(open(path))]


def fit(rs) -> tuple[float, float, float]:
    """fit_moe.grid_fit with no compute term: t0 up to 6 us (the latency of the smallest launches), the
    memory efficiency by 0.01 from 0.1 to 2 (over 1: the byte count over-counts broadcast tensors)."""
    b = [r[2] for r in rs]
    return grid_fit(b, [0.0] * len(b), [r[3] for r in rs], 6e-6, np.arange(0.1, 2.0001, 0.01))


def profile_row(path: Path = DATA) -> str:
    t0, em, _ = fit([r for r in rows(path) if r[0] in FIT_MODELS])
    return f"inductormodel\t{t0 * 1e9:.6g}\t{em:.6g}\t1"


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "collect":
        traces = dict(a.split("=", 1) for a in sys.argv[3:])
        print(f"{collect(Path(sys.argv[2]), {k: Path(v) for k, v in traces.items()})} launches")
        return
    rs = rows()
    coef = fit([r for r in rs if r[0] in FIT_MODELS])
    print(f"inductormodel\t{coef[0] * 1e9:.6g}\t{coef[1]:.6g}\t1")
    print("| model | split | launches | median abs err | p90 abs err | median err |\n|---|---|---|---|---|---|")
    for m in FIT_MODELS + HELD_OUT_MODELS:
        sel = [r for r in rs if r[0] == m]
        if not sel:
            continue
        err = np.array([float(model(coef, r[2], 0.0) / r[3] - 1) for r in sel])
        split = "fit" if m in FIT_MODELS else "held-out"
        print(f"| {m} | {split} | {len(sel)} | {np.median(np.abs(err)):.1%} | {np.quantile(np.abs(err), 0.9):.1%} "
              f"| {np.median(err):+.1%} |")


if __name__ == "__main__":
    main()
