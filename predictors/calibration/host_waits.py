"""Where a real program's host waited for the GPU, from a recording of `timewarp record --shim`'s library.

    python predictors/calibration/host_waits.py REC.tsv --out SUMMARY.json [--min-us 300] [--last 4000]

The recorder writes an `A` row for each launch, copy, memset and graph launch (the host's time inside the
call) and an `L` row for any other runtime or driver call that took the host over 300 us
(shim_c/record/record.c). For every such long call this lists its name, duration and thread, and how many
operations the GPU still had queued when it began: operations issued before it (by their API call's start)
whose last GPU activity (kernel, copy or memset rows of the same correlation id; a graph launch counts once)
ended after it began. A launch that waited with about 1021 operations queued met the stream queue's depth
(predictors/data/h200/launch_queue_2026-12-01); a synchronising call shows its own name.
Caveat: vLLM's shutdown kills the EngineCore, and the CUPTI buffers not yet written are lost with it: in the
fourteenth session's run (case 2, 32 prompts) only the case's first 2 s came back, and CUPTI's own cost
(about 0.75 ms per graph replay) slowed the steps. That run found one 140 ms cuKernelSetAttribute, the lead
to cuBLAS's lazy loading (cublas_first_use.json); py-spy (real_vllm_baseline.sh SPY=) served better.
"""
from __future__ import annotations

import argparse
import collections
import json

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-us", type=float, default=300.0)
    ap.add_argument("--last", type=int, default=4000, help="keep the last N long calls in full")
    a = ap.parse_args()
    api = {}                                   # corr -> (start, end, thread, name)
    gpu_end = collections.defaultdict(int)     # corr -> last GPU end
    longs = []
    with open(a.rec, errors="replace") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            tag = p[0]
            if tag == "A" and len(p) == 6:
                api[int(p[1])] = (int(p[2]), int(p[3]), int(p[4]), p[5])
            elif tag == "L" and len(p) == 6:
                longs.append((int(p[2]), int(p[3]), int(p[4]), p[5], int(p[1])))
            elif tag in ("K", "M", "S") and len(p) > 5:
                c, e = int(p[1]), int(p[5])
                if e > gpu_end[c]:
                    gpu_end[c] = e
    min_ns = a.min_us * 1e3
    for c, (s, e, t, n) in api.items():
        if e - s >= min_ns:
            longs.append((s, e, t, n, c))
    longs.sort()
    corrs = [c for c in api if c in gpu_end]
    issued = np.array([api[c][0] for c in corrs], dtype=np.int64)
    ends = np.array([gpu_end[c] for c in corrs], dtype=np.int64)
    order = np.argsort(issued)
    issued, ends = issued[order], ends[order]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    rows = []
    for s, e, t, n, c in longs:
        k = np.searchsorted(issued, s)          # operations issued before this call
        pending = int((ends[:k] > s).sum())
        rows.append({"start_ns": s, "us": round((e - s) / 1e3, 1), "thread": t, "api": n, "pending": pending})
        by_name[n][0] += 1
        by_name[n][1] += (e - s) / 1e6
    summary = {
        "ops": len(corrs), "long_calls": len(rows),
        "by_api": {n: {"count": v[0], "total_ms": round(v[1], 2)} for n, v in
                   sorted(by_name.items(), key=lambda kv: -kv[1][1])},
        "pending_hist": collections.Counter(min(r["pending"] // 100 * 100, 2000) for r in rows),
        "last": rows[-a.last:],
    }
    summary["pending_hist"] = {str(k): v for k, v in sorted(summary["pending_hist"].items())}
    with open(a.out, "w") as f:
        json.dump(summary, f)
    print(json.dumps({k: summary[k] for k in ("ops", "long_calls", "pending_hist")}))
    for n, v in list(summary["by_api"].items())[:15]:
        print(f"{v['count']:7d} {v['total_ms']:10.1f} ms  {n}")


if __name__ == "__main__":
    main()
