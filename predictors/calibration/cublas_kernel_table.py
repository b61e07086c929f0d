"""Which cuBLAS kernel every token count runs, for whole models' GEMMs, and which calls load a kernel (H200).

    python predictors/calibration/cublas_kernel_table.py --out FILE.json [--budget-s S] [--models a,b]
        [--dtype bf16|fp16] [--layout TN|NN] [--no-events]

cublas_first_use.json showed that cuBLAS loads each kernel at its first use in a process, and that the load
waits for the GPU's queued work; its kernel table sampled token counts every 8 (to 512) and every 64 (to
8192). The emulator must know when a token count meets a kernel not loaded yet, so this script takes every
token count 1..8192 (lm_head: 1..1024 rows) for each projection of several models, in a fresh process:
  - the kernel(s) each call runs (torch.profiler, a 1-element fill between calls to separate them),
  - the call's host time with the GPU idle before it (a load costs ~2.5 ms, a warm call ~10-20 us),
  - the GEMM kernel's GPU duration (us).
Before the tables, two facts about events around a first use (device_basics.py's 20-GEMM check):
  - `deferred`: e0.record(), the host spins 3 ms, a warm GEMM, e1.record(): does e0's timestamp include the
    3 ms (event submitted at once) or not (submission deferred to the next launch)?
  - `gemm20`: device_basics.py's loop (e0, 20 x 8192^3 GEMMs, e1) with the kernel cold, then warm.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from gpu_helpers import LLAMA3_8B_LINEAR

# (k, n) of each projection: y[T, n] = x[T, k] @ W[n, k]^T
MODELS = {
    "llama3_8b": LLAMA3_8B_LINEAR,
    "llama3_8b_tp2": {"qkv": (4096, 3072), "o": (2048, 4096), "gate_up": (4096, 14336), "down": (7168, 4096),
                      "lm_head": (4096, 64128)},
    "qwen2_5_7b": {"qkv": (3584, 4608), "o": (3584, 3584), "gate_up": (3584, 37888), "down": (18944, 3584),
                   "lm_head": (3584, 152064)},
    "llama3_70b_tp4": {"qkv": (8192, 2560), "o": (2048, 8192), "gate_up": (8192, 14336), "down": (7168, 8192),
                       "lm_head": (8192, 32064)},
}
MAX_TOKENS, MAX_ROWS, CHUNK = 8192, 1024, 1024


def spin(ms: float) -> None:
    t = time.perf_counter() + ms / 1e3
    while time.perf_counter() < t:
        pass


def event_facts() -> dict:
    out = {}
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    a @ a
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rows = []
    for spin_ms in (0.0, 3.0, 3.0, 10.0):
        torch.cuda.synchronize()
        e0.record()
        spin(spin_ms)
        a @ a
        e1.record()
        torch.cuda.synchronize()
        rows.append({"spin_ms": spin_ms, "event_ms": round(e0.elapsed_time(e1), 4)})
    out["deferred"] = rows
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    g = []
    for label in ("cold", "warm", "warm"):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        e0.record()
        first = None
        for i in range(20):
            ti = time.perf_counter_ns()
            big @ big
            if i == 0:
                first = (time.perf_counter_ns() - ti) / 1e3
        e1.record()
        torch.cuda.synchronize()
        g.append({"kernel": label, "event_ms": round(e0.elapsed_time(e1), 4),
                  "perf_ms": round((time.perf_counter() - t0) * 1e3, 4), "first_call_us": round(first, 1)})
    out["gemm20"] = g
    return out


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def table(proj: dict, deadline: float, dtype=torch.bfloat16, layout: str = "TN") -> dict:
    """layout TN: torch.mm(x, W.t()) with W [n, k] (F.linear: cuBLAS's A transposed); NN: torch.mm(x, V)
    with V [k, n] contiguous (x @ W as stored by, e.g., GPT-2's Conv1D)."""
    from torch.profiler import ProfilerActivity, profile
    mark = torch.zeros(1, device="cuda")
    res = {}
    for p, (k, n) in proj.items():
        w = torch.randn(n, k, device="cuda", dtype=dtype)
        if layout == "NN":
            w = w.t().contiguous().t()    # the same values, stored [k, n]: w.t() is then contiguous
        top = MAX_ROWS if p == "lm_head" else MAX_TOKENS
        x = torch.randn(top, k, device="cuda", dtype=dtype)
        names, runs, gpu_us, host_us = [], [], [], []
        for c0 in range(1, top + 1, CHUNK):
            if time.time() > deadline:
                break
            ts = list(range(c0, min(top, c0 + CHUNK - 1) + 1))
            hs = []
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for t in ts:
                    mark.fill_(0)
                    torch.cuda.synchronize()
                    t1 = time.perf_counter_ns()
                    torch.mm(x[:t], w.t())
                    hs.append((time.perf_counter_ns() - t1) / 1e3)
                mark.fill_(0)
                torch.cuda.synchronize()
            ev = sorted((e for e in prof.profiler.kineto_results.events()
                         if e.device_type() == torch.autograd.DeviceType.CUDA), key=lambda e: e.start_ns())
            groups, cur = [], None
            for e in ev:
                nm = e.name()
                if "FillFunctor" in nm:
                    if cur is not None:
                        groups.append(cur)
                    cur = []
                elif cur is not None:
                    cur.append((nm, e.duration_ns()))
            if len(groups) != len(ts):
                raise SystemExit(f"{p}: {len(groups)} kernel groups for {len(ts)} calls")
            for t, grp, h in zip(ts, groups, hs):
                main = [g for g in grp if not g[0].startswith("Memset")]
                kname = "+".join(g[0] for g in main)
                if kname not in names:
                    names.append(kname)
                key = [names.index(kname), int(len(main) < len(grp))]
                if runs and runs[-1][2:] == key and runs[-1][1] == t - 1:
                    runs[-1][1] = t
                else:
                    runs.append([t, t] + key)
                gpu_us.append(round(sum(g[1] for g in main) / 1e3, 2))
                host_us.append(round(h, 1))
        res[p] = {"k": k, "n": n, "kernels": names, "runs": runs, "gpu_us": gpu_us, "host_us": host_us}
        slow = sum(h > 800 for h in host_us)
        print(f"{p}: {len(gpu_us)} token counts, {len(names)} kernels, {len(runs)} runs, {slow} calls > 0.8 ms",
              flush=True)
        del w, x
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--layout", choices=("TN", "NN"), default="TN")
    ap.add_argument("--no-events", action="store_true", help="skip the event facts")
    a = ap.parse_args()
    deadline = time.time() + a.budget_s
    small = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.mm(small, small)
    torch.cuda.synchronize()
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cublas": torch._C._cuda_getCompiledVersion() if hasattr(torch._C, "_cuda_getCompiledVersion") else None,
           "columns": "runs: [first token count, last, kernel index, memset before it (1/0)]; gpu_us and host_us "
                      "per token count from 1",
           "dtype": a.dtype, "layout": a.layout, "events": {} if a.no_events else event_facts(), "models": {}}
    print(json.dumps(out["events"]), flush=True)
    for m in a.models.split(","):
        if time.time() > deadline:
            print("budget spent before", m, flush=True)
            break
        t = time.time()
        out["models"][m] = table(MODELS[m], deadline, DTYPES[a.dtype], a.layout)
        print(m, "done in", round(time.time() - t, 1), "s", flush=True)
        with open(a.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
