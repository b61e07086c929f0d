"""What the first launch of a kernel costs the host under CUDA's lazy module loading (the default since CUDA
12.2: a kernel's code is loaded into the context at its first launch, not at start-up).

For each of a list of PyTorch operations, each compiled to its own kernels, a fresh process times the first
call and the second (each synchronized, time.perf_counter and the thread's CPU time). The first call also
pays PyTorch's own first-dispatch work, which an emulated program pays too; the lazy load alone is the
difference between a process with CUDA_MODULE_LOADING=LAZY and one with EAGER (every kernel loaded when the
context is created). Run on the real GPU:

    python3 predictors/calibration/lazy_loading_bench.py --out DIR

Writes DIR/lazy_loading.json: per mode and repetition, per operation (first_s, second_s, first_cpu_s,
second_cpu_s), and the context creation time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def ops(torch):
    """(name, callable) pairs, each launching kernels no earlier pair launched."""
    dev = "cuda"
    out = []
    unary = ["sin", "cos", "exp", "log", "sqrt", "tanh", "sigmoid", "erf", "log1p", "expm1", "rsqrt",
             "reciprocal", "floor", "ceil", "neg", "abs"]
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.ones(1 << 16, device=dev, dtype=dt)
        for u in unary:
            out.append((f"{u}.{str(dt)[6:]}", (lambda f, x: lambda: f(x))(getattr(torch, u), x)))
    for dt in (torch.float32, torch.bfloat16):
        m = torch.ones(256, 4096, device=dev, dtype=dt)
        out += [(f"sum.{str(dt)[6:]}", (lambda m: lambda: m.sum(dim=-1))(m)),
                (f"amax.{str(dt)[6:]}", (lambda m: lambda: m.amax(dim=-1))(m)),
                (f"softmax.{str(dt)[6:]}", (lambda m: lambda: torch.softmax(m, dim=-1))(m)),
                (f"layer_norm.{str(dt)[6:]}", (lambda m: lambda: torch.nn.functional.layer_norm(m, (4096,)))(m)),
                (f"cumsum.{str(dt)[6:]}", (lambda m: lambda: torch.cumsum(m, dim=-1))(m)),
                (f"topk.{str(dt)[6:]}", (lambda m: lambda: torch.topk(m, 50, dim=-1))(m)),
                (f"sort.{str(dt)[6:]}", (lambda m: lambda: torch.sort(m, dim=-1))(m)),
                (f"argmax.{str(dt)[6:]}", (lambda m: lambda: torch.argmax(m, dim=-1))(m))]
    q = torch.ones(1, 32, 256, 128, device=dev, dtype=torch.bfloat16)
    out.append(("sdpa_flash.bf16", lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)))
    a = torch.ones(256, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.ones(4096, 14336, device=dev, dtype=torch.bfloat16)
    out.append(("gemm.bf16", lambda: a @ w))
    p = torch.ones(64, 128256, device=dev, dtype=torch.float32).softmax(-1)
    out.append(("multinomial.f32", lambda: torch.multinomial(p, 1)))
    return out


def child() -> dict:
    t0 = time.perf_counter()
    import torch
    torch.cuda.init()
    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    ctx_s = time.perf_counter() - t0
    res = {"mode": os.environ.get("CUDA_MODULE_LOADING", "default"), "context_s": ctx_s, "ops": {}}
    for name, fn in ops(torch):
        torch.cuda.synchronize()
        row = []
        for _ in range(2):
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            torch.cuda.synchronize()
            row += [time.perf_counter() - t0, time.thread_time() - c0]
        res["ops"][name] = {"first_s": row[0], "first_cpu_s": row[1], "second_s": row[2], "second_cpu_s": row[3]}
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child()))
        return 0
    runs = []
    for rep in range(a.reps):
        for mode in ("LAZY", "EAGER"):
            env = {**os.environ, "CUDA_MODULE_LOADING": mode}
            p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env, timeout=300)
            if p.returncode != 0:
                runs.append({"mode": mode, "error": p.stderr[-2000:]})
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["rep"] = rep
            runs.append(r)
            lazy = [v["first_s"] - v["second_s"] for v in r["ops"].values()]
            print(f"{mode} rep {rep}: context {r['context_s']:.2f} s, first-call extra median "
                  f"{sorted(lazy)[len(lazy) // 2] * 1e6:.0f} us, total {sum(lazy) * 1e3:.1f} ms over {len(lazy)} ops",
                  flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "lazy_loading.json"), "w") as f:
        json.dump({"runs": runs, "torch": __import__("torch").__version__}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
