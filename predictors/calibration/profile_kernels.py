"""GPU activities of a torch-profiler trace as a compact table: what a real vLLM server's steps ran.

    python3 predictors/calibration/profile_kernels.py TRACE_DIR OUT.csv.gz

TRACE_DIR holds the kineto Chrome traces (*.pt.trace.json[.gz]) that vLLM's own profiler writes when the
server runs with --profiler-config '{"profiler": "torch", "torch_profiler_dir": ...}' and `vllm bench serve
--profile` starts and stops it (integrations/bench/real_vllm_baseline.sh, PROFILE_CASES). Every GPU activity
(kernels, copies, memsets) becomes one row: ts_us, dur_us, cat, name (demangled as kineto gives it), grid,
block, stream. Raw traces are hundreds of MB; this table is what comes back from the lease. Needs only the
standard library. predictors/compare_vllm_serving_steps.py reads it."""
from __future__ import annotations

import csv
import gzip
import json
import pathlib
import sys

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def rows(trace: pathlib.Path):
    opener = gzip.open if trace.suffix == ".gz" else open
    with opener(trace, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    for e in events:
        if e.get("cat") in GPU_CATS and e.get("ph") == "X":
            a = e.get("args", {})
            yield (f"{float(e['ts']):.3f}", f"{float(e.get('dur', 0)):.3f}", e["cat"], e.get("name", ""),
                   "x".join(str(v) for v in a.get("grid", [])), "x".join(str(v) for v in a.get("block", [])),
                   a.get("stream", ""))


def main(argv: list[str]) -> int:
    src, out = pathlib.Path(argv[0]), pathlib.Path(argv[1])
    traces = sorted(p for p in src.rglob("*") if p.name.endswith((".pt.trace.json", ".pt.trace.json.gz")))
    if not traces:
        print(f"no torch-profiler trace under {src}", file=sys.stderr)
        return 1
    n = 0
    with gzip.open(out, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trace", "ts_us", "dur_us", "cat", "name", "grid", "block", "stream"])
        for i, t in enumerate(traces):
            for r in rows(t):
                w.writerow([i, *r])
                n += 1
    print(f"{n} GPU activities from {len(traces)} trace(s) -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
