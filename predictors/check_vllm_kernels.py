"""Check the profile's `kern` rows from the vLLM recording (profile_build.vllm_kernel_rows, vllm_kernels_2026-11-30):

1. held-out error: every held-out launch key (name, grid, block) of the recording predicted from the table's
   rows (profile_build.KernTable, profile.c's lookup: exact key, else log-log interpolation over the number of
   blocks within the name and block shape), against the key's median measured duration; per kernel family and
   overall, median and p90 of |error|, per key and weighted by launches.
2. coverage of an emulated run: an emulator trace (`timewarp run --trace FILE`, Chrome JSON; `name` is the
   mangled kernel name, demangled here with libstdc++'s __cxa_demangle as the shim does) is matched against
   the table: per launch, `exact` (its key has a row), `interp` (its name and block shape have rows), or
   `none` (roofline). Annotated GEMMs (cublas::gemm), copies and the step-timed FA3 main kernel are not kern
   rows' business and are left out. Reported for the decode steps (steps are delimited by vLLM's
   _gumbel_sample_kernel; a decode step has no _prepare_prefill_inputs_kernel) and for the whole trace.

    python -m timewarp.predictors.check_vllm_kernels [--trace /tmp/e3/trace.json]
"""
from __future__ import annotations

import argparse
import json
import re
import sys

from . import profile_build as pb
from .demangle import demangler as _demangler


def held_out_errors():
    """Per held-out key: measured median, predicted (without kgap: the table's kernel time) and error."""
    table = pb.kern_table()
    kt = pb.KernTable(table, 0.0)
    v = pb.vllm_kernel_rows()
    fam = v.groupby("name").family.first() if "family" in v.columns else None
    keys = v[v.held_out].groupby(pb.KERN_KEY).dur_ns.agg(["median", "size"]).reset_index()
    pred, how = [], []
    for r in keys.itertuples():
        ns, layer = kt.predict_ns(r.name, (r.grid_x, r.grid_y, r.grid_z), (r.block_x, r.block_y, r.block_z))
        pred.append(ns)
        how.append(layer)
    keys = keys.assign(pred_ns=pred, layer=how)
    keys = keys.assign(err=(keys.pred_ns - keys["median"]) / keys["median"],
                       family=keys.name.map(fam) if fam is not None else "")
    return keys


def _short(name: str) -> str:
    m = re.search(r"(FlashAttnFwdCombine|prepare_varlen_num_blocks_kernel<\d+|reshape_and_cache_flash_kernel|"
                  r"splitKreduce_kernel|[A-Za-z_:]*(?:elementwise|gather|reduce|index)[A-Za-z_]*kernel[^<(]*)", name)
    return m.group(1) if m else name[:60]


def trace_coverage(path: str):
    """Per launch of the trace that kern rows would time: its step, whether the step decodes, and the
    lookup result ('exact', 'interp', 'none') against the table this checkout builds."""
    import pandas as pd

    demangle = _demangler()
    kt = pb.KernTable(pb.kern_table(), 0.0)
    ev = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    ev.sort(key=lambda e: e["ts"])
    cache = {}
    rows, step, prefill_steps = [], 0, set()
    for e in ev:
        name = e["name"]
        if name == "_gumbel_sample_kernel":
            step += 1
        if name == "_prepare_prefill_inputs_kernel":
            prefill_steps.add(step)
        a = e.get("args", {})
        if not a.get("grid") or not any(a["grid"]) or name == "cublas::gemm" or name.startswith("Memcpy"):
            continue
        if name not in cache:
            cache[name] = demangle(name)
        d = cache[name]
        if re.search(pb.STEP_KERNEL, d):
            continue
        _, layer = kt.predict_ns(d, a["grid"], a["block"])
        rows.append({"step": step, "name": d, "grid": tuple(a["grid"]), "block": tuple(a["block"]), "match": layer,
                     "emulated_layer": a.get("layer")})
    t = pd.DataFrame(rows)
    return t.assign(decode=~t.step.isin(prefill_steps) & (t.step > 0))


def main(argv=None) -> int:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="/tmp/e3/trace.json", help="an emulator trace of a vLLM run")
    args = ap.parse_args(argv)

    table = pb.kern_table()
    print(f"kern rows: {len(table)} ({', '.join(f'{n} from {s}' for s, n in table.source.value_counts().items())})")
    k = held_out_errors()
    k = k.assign(abs_err=k.err.abs())
    print("\nheld-out launch keys of the vLLM recording (kernel time, kgap excluded):")
    print(f"{'family':16s} {'keys':>5s} {'launches':>8s} {'median|err|':>11s} {'p90|err|':>9s} {'median err':>10s}")
    for fam, g in [*k.groupby("family"), ("all", k)]:
        print(f"{fam:16s} {len(g):5d} {int(g['size'].sum()):8d} {g.abs_err.median() * 100:10.1f}% "
              f"{np.quantile(g.abs_err, 0.9) * 100:8.1f}% {g.err.median() * 100:+9.1f}%")
    print("worst held-out keys:")
    for r in k.sort_values("abs_err", ascending=False).head(8).itertuples():
        print(f"  {r.err * 100:+7.1f}%  {_short(r.name)[:50]:50s} grid {r.grid_x}x{r.grid_y}x{r.grid_z} "
              f"block {r.block_x}: real {r.median / 1e3:.2f} us, table {r.pred_ns / 1e3:.2f} us")

    try:
        t = trace_coverage(args.trace)
    except OSError as e:
        print(f"\nno trace: {e}")
        return 0
    print(f"\nemulated launches of {args.trace} that kern rows time (GEMMs, copies, FA3 main left out):")
    for label, g in [("decode steps", t[t.decode]), ("whole trace", t)]:
        c = g.match.value_counts(normalize=True)
        print(f"  {label:13s} {len(g):7d} launches: exact {c.get('exact', 0) * 100:5.1f}%  interp "
              f"{c.get('interp', 0) * 100:5.1f}%  none {c.get('none', 0) * 100:5.1f}%")
    steps = t[t.decode].groupby("step").match.apply(lambda s: (s == "exact").mean())
    if len(steps):
        print(f"  per decode step ({len(steps)} steps): exact {steps.median() * 100:.1f}% median, "
              f"min {steps.min() * 100:.1f}%")
        one = t[t.step == steps.index[len(steps) // 2]]
        print(f"  one decode step (step {one.step.iloc[0]}), per kernel:")
        for (name, grid, block), g in one.groupby(["name", "grid", "block"], sort=False):
            print(f"    {len(g):3d} x {_short(name)[:55]:55s} grid {grid} block {block}: {g.match.iloc[0]}")
    miss = t[t.match == "none"].groupby("name").size().sort_values(ascending=False)
    if len(miss):
        print("  names without rows (roofline):", ", ".join(f"{_short(n)[:40]} ({c})" for n, c in miss.head(8).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
