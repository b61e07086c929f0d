"""`timewarp validate`: run the calibration microbenchmarks under emulation and compare them with the same
benchmarks measured on the real GPU.

The benchmark script (predictors/calibration/microbench_h200.py) is unmodified PyTorch: on the H200 it
wrote predictors/data/h200/microbench_*/; here it runs under `timewarp run` and writes the same tables,
which are joined on their configuration columns. The error of a row is (emulated - real) / real of the
median per-launch time; each family (GEMM, attention, elementwise/norm, memcpy) is reported per timing mode
(`graph`: one replay of a CUDA graph of `inner` launches, per launch, so its fixed per-replay cost (host launch,
graph start: about 12 us on the H200) is divided among them; `graph-node`: the per-node device time, the
slope between replays of inner and 4 x inner nodes, where both runs measured it (`--graph-slope`): what a
kernel family's predictor is judged on; `eager_loop`: what an eager launch loop achieves, where the host's
launch cost counts).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

from timewarp.predictors.profile_build import DENSE_SRC, GEMM_SRC, MODEL_ORDER, MODELS_SRC, SDPA_SRC, SLOPE_SRC

HERE = pathlib.Path(__file__).resolve().parent
BENCH = HERE / "calibration" / "microbench_h200.py"
# The H100 (2026-12-05): the same sections on the real card, for the transfer of the H200's data (nothing of
# the H100 is in the profile, so every row is out of the fit: split "transfer")
H100 = HERE / "data" / "h100" / "transfer_2026-12-05"
# the nine other models' linear layers on the H100 (2026-12-06: the gemm_models section alone)
H100_MODELS = HERE / "data" / "h100" / "gemm_models_2026-12-06"
DATA = {"H200": HERE / "data" / "h200" / "microbench_2026-11-29", "H100": H100}
# newer measurements of some tables: the elementwise and memcpy sections rerun with --graph-slope (node_us),
# the folder the profile's per-node rows come from; the GEMM and attention sections rerun at full clock (--cool-ms),
# and other models' linear layers (the gemm_models section) beside the GEMM rows
DATA_TABLES = {"H200": {"gemm": [GEMM_SRC, MODELS_SRC], "sdpa": SDPA_SRC, "elementwise": SLOPE_SRC, "memcpy": DENSE_SRC if (DENSE_SRC / "memcpy.parquet").exists() else SLOPE_SRC},
               "H100": {"gemm": [H100 / "mb_gemm", H100_MODELS], "sdpa": H100 / "mb_sdpa",
                        "elementwise": H100 / "mb_slope", "memcpy": H100 / "mb_copy"}}
# the memcpy section's sizes: the dense grid (2^k and 1.5 x 2^k, 1 KiB-2 GiB) where its measurements are stored
MEMCPY_GRID = "dense" if DATA_TABLES["H200"]["memcpy"] == DENSE_SRC else "pow2"

# table -> (family shown, configuration columns that identify a row)
TABLES = {
    "gemm": ("GEMM", ["op", "dtype", "m", "n", "k", "batch", "tag", "mode"]),
    "sdpa": ("attention", ["phase", "batch", "q_len", "kv_len", "causal", "gqa", "backend", "mode"]),
    "elementwise": ("elementwise/norm", ["op", "dtype", "numel", "mode"]),
    "memcpy": ("memcpy", ["op", "bytes", "mode"]),
}
SECTIONS = "gemm_main,gemm_models,elementwise,memcpy,sdpa"


class ValidateError(RuntimeError):
    pass


def real_data(gpu: str) -> pathlib.Path:
    if gpu not in DATA:
        raise ValidateError(f"no real measurements stored for {gpu}; measured GPUs: {', '.join(DATA)}")
    return DATA[gpu]


FIT_PROFILE = HERE / "data" / "h200" / "profile_fit.tsv"   # without the held-out rows (profile_build.py)


def run_emulated(outdir: pathlib.Path, gpu: str, sections: str = SECTIONS, budget: int = 3000) -> None:
    cmd = [sys.executable, "-m", "timewarp", "run", "--gpu", gpu, "--", sys.executable, str(BENCH), str(outdir),
           "--sections", sections, "--budget", str(budget), "--graph-slope", "--memcpy-grid", MEMCPY_GRID,
           # as the real GEMM and attention rows were timed (GEMM_SRC, SDPA_SRC): each repetition at full clock
           "--cool-ms", "150", "--cool-sections", "gemm_main,gemm_extra,gemm_models,sdpa", "--names", "subset"]
    # the profile without the held-out rows, so that their errors are those of the predictor's interpolation;
    # another GPU's rows are all held out of the profile, which keeps every H200 row to transfer from
    env = {**os.environ, "TIMEWARP_PROFILE": str(FIT_PROFILE)} if gpu == "H200" else dict(os.environ)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise ValidateError(f"the benchmark failed under emulation (exit {p.returncode}):\n{p.stderr[-3000:]}")


def _split(table: str, row) -> str:
    """Whether the profile (predictors/profile_build.py) was fitted on this row: 'fit', 'held-out', or
    'no profile' for families the profile does not cover yet."""
    from timewarp.predictors import profile_build as pb

    family = {"gemm": "gemm", "sdpa": "attn", "memcpy": "copy",
              "elementwise": "kern"}.get(table)   # elementwise: the recorder's launches, split by element count
    if family is None:
        return "no profile"
    try:
        return "held-out" if pb.is_held_out(family, row) else "fit"
    except (AttributeError, ValueError, TypeError):
        return "no profile"


def _passes_median(t, keys):
    """A table measured in several passes over its grid (column `pass`, --memcpy-passes): the median per row."""
    if "pass" not in t.columns:
        return t
    if "error" in t.columns:
        t = t[t.error.isna()]
    return t.groupby([c for c in keys if c in t.columns], as_index=False).median(numeric_only=True).drop(columns="pass")


def _with_node_rows(pd, t):
    """The table plus, for each graph row with node_us, a 'graph-node' row whose t_median_us is node_us."""
    if "node_us" not in t.columns:
        return t
    g = t[(t["mode"] == "graph") & t.node_us.notna() & (t.node_us > 0)]
    return pd.concat([t, g.assign(mode="graph-node", t_median_us=g.node_us)], ignore_index=True)


def compare(real_dir: pathlib.Path, emu_dir: pathlib.Path, tables: dict | None = None, transfer: bool = False):
    """Per-row errors (a DataFrame) and the summary per family and mode. tables: table -> folder of the real
    measurements that replace real_dir's for that table. transfer: the real card is not the profiled one, so
    every row's split is "transfer"."""
    import pandas as pd

    rows = []
    for table, (family, keys) in TABLES.items():
        src = (tables or {}).get(table, real_dir)
        rps = [d / f"{table}.parquet" for d in (src if isinstance(src, list) else [src])]
        rps, ep = [p for p in rps if p.exists()], emu_dir / f"{table}.parquet"
        if not rps or not ep.exists():
            continue
        r = _passes_median(pd.concat([pd.read_parquet(p) for p in rps], ignore_index=True), keys)
        e = _passes_median(pd.read_parquet(ep), keys)
        r, e = _with_node_rows(pd, r), _with_node_rows(pd, e)
        keys = [c for c in keys if c in r.columns and c in e.columns]
        m = r.merge(e, on=keys, suffixes=("_real", "_emu"))
        m = m[(m.t_median_us_real > 0) & (m.t_median_us_emu > 0)]
        m = m.assign(family=family, table=table,
                     err=(m.t_median_us_emu - m.t_median_us_real) / m.t_median_us_real)
        m = m.assign(split=["transfer" if transfer else _split(table, r) for r in m.itertuples()])
        if table == "gemm":  # other models' linear layers: the held-out ones are models the fit never saw
            m.loc[m.tag.isin(MODEL_ORDER), "family"] = "GEMM, other models"
        if table == "sdpa":  # a backend forced by the program runs other kernels, which the profile lacks
            m.loc[m.backend != "default", "family"] = "attention, forced"
        if table == "memcpy":  # torch's zero_() is a fill kernel, not a copy
            m.loc[~m.op.isin(["H2D_pinned", "H2D_pageable", "D2H_pinned", "D2H_pageable", "D2D"]), "family"] = "memset/fill"
        rows.append(m[["family", "table", "split", *keys, "t_median_us_real", "t_median_us_emu", "err"]])
    if not rows:
        raise ValidateError(f"no table of {real_dir} has a counterpart in {emu_dir}")
    per_row = pd.concat(rows, ignore_index=True)
    summary = (per_row.assign(abs_err=per_row.err.abs())
               .groupby(["family", "mode", "split"])
               .agg(n=("err", "size"), median_abs=("abs_err", "median"),
                    p90_abs=("abs_err", lambda s: s.quantile(0.9)), bias=("err", "median"))
               .reset_index())
    return per_row, summary


def format_summary(summary) -> str:
    lines = [f"{'family':18s} {'mode':10s} {'rows':10s} {'n':>5s} {'median |err|':>13s} {'p90 |err|':>10s} "
             f"{'median err':>11s}"]
    for _, r in summary.iterrows():
        lines.append(f"{r.family:18s} {r['mode']:10s} {r.split:10s} {r.n:5d} {r.median_abs * 100:12.1f}% "
                     f"{r.p90_abs * 100:9.1f}% {r.bias * 100:+10.1f}%")
    return "\n".join(lines)


def validate(gpu: str = "H200", sections: str = SECTIONS, keep: str | None = None, errors_csv: str | None = None):
    real = real_data(gpu)
    with tempfile.TemporaryDirectory(prefix="timewarp-validate-") as tmp:
        out = pathlib.Path(keep) if keep else pathlib.Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        run_emulated(out, gpu, sections)
        per_row, summary = compare(real, out, DATA_TABLES.get(gpu), transfer=gpu != "H200")
    if errors_csv:
        per_row.to_csv(errors_csv, index=False)
    return per_row, summary
