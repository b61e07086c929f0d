"""vLLM's Triton fused-MoE kernels on the real GPU, per launch, over token counts and model shapes.

For each MoE shape (experts E, top_k, hidden H, expert intermediate I) and each token count M, runs vLLM's
`fused_experts` (bf16, random weights and random router logits: the routing of a dummy-weight model) and
records every kernel of one call with torch.profiler (CUPTI device time, mean over REPS calls): the
`fused_moe_kernel` launches (gate-up [E, 2I, H], then down [E, H, I]) and the routing/sum kernels around them.
Needs vLLM importable (the device's /tmp/site). Writes OUT/moe_kernels.csv and OUT/moe_summary.json.

    python3 predictors/calibration/moe_bench.py OUT [--shapes qwen15,mixtral,...] [--budget-s 200]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import time

# name: (experts, top_k, hidden, expert intermediate) of public MoE models
SHAPES = {
    "qwen1.5-moe-a2.7b": (60, 4, 2048, 1408),
    "mixtral-8x7b": (8, 2, 4096, 14336),
    "qwen3-30b-a3b": (128, 8, 2048, 768),
    "deepseek-v2-lite": (64, 6, 2048, 1408),
    "olmoe-1b-7b": (64, 8, 2048, 1024),
}
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
REPS = 10


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--budget-s", type=float, default=240)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    from torch.profiler import ProfilerActivity, profile
    from vllm.model_executor.layers.fused_moe.fused_moe import fused_experts
    t0 = time.time()
    dev = "cuda"
    rows, summary = [], {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "reps": REPS,
                         "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shapes": {}}
    import vllm
    summary["vllm"] = vllm.__version__
    for name in a.shapes.split(","):
        E, topk, H, I = SHAPES[name]
        g = torch.Generator(device=dev).manual_seed(0)
        w1 = (torch.randn(E, 2 * I, H, device=dev, dtype=torch.bfloat16, generator=g) * 0.02)
        w2 = (torch.randn(E, H, I, device=dev, dtype=torch.bfloat16, generator=g) * 0.02)
        summary["shapes"][name] = {"experts": E, "top_k": topk, "hidden": H, "intermediate": I}
        for M in (int(x) for x in a.tokens.split(",")):
            if time.time() - t0 > a.budget_s:
                summary["stopped"] = f"budget at {name} M={M}"
                break
            x = torch.randn(M, H, device=dev, dtype=torch.bfloat16, generator=g)
            logits = torch.randn(M, E, device=dev, dtype=torch.float32, generator=g)
            wts, ids = torch.topk(torch.softmax(logits, -1), topk, dim=-1)
            ids = ids.to(torch.int32)
            fn = lambda: fused_experts(x, w1, w2, wts, ids)  # noqa: E731
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(REPS):
                fn()
            e.record()
            torch.cuda.synchronize()
            eager_us = s.elapsed_time(e) * 1e3 / REPS
            time.sleep(0.05)
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(REPS):
                    fn()
                torch.cuda.synchronize()
            evs = sorted((ev for ev in p.events() if ev.device_type == torch.autograd.DeviceType.CUDA),
                         key=lambda ev: ev.time_range.start)
            per = len(evs) // REPS
            acc: dict[int, list] = {}
            for i, ev in enumerate(evs[: per * REPS]):
                acc.setdefault(i % per, [ev.name, []])[1].append(ev.time_range.elapsed_us())
            if not acc:   # no device activities (under emulation): the call's event time alone
                acc[0] = ["<no profiler events>", [float("nan")]]
            for idx, (kname, durs) in sorted(acc.items()):
                durs.sort()
                rows.append({"shape": name, "experts": E, "top_k": topk, "hidden": H, "intermediate": I,
                             "tokens": M, "idx": idx, "kernel": kname[:200], "median_us": durs[len(durs) // 2],
                             "mean_us": sum(durs) / len(durs), "eager_call_us": eager_us})
            print(f"[{time.time() - t0:6.1f}s] {name} M={M}: {per} kernels, eager {eager_us:.1f} us; "
                  + ", ".join(f"{r['kernel'][:20]} {r['median_us']:.1f}" for r in rows[-len(acc):]), flush=True)
            del x, logits, wts, ids
        del w1, w2
        torch.cuda.empty_cache()
    with open(os.path.join(a.out, "moe_kernels.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "moe_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
