"""A decode step's weight GEMMs on the real GPU: alone, and streamed over a whole model's weights.

    python predictors/calibration/decode_gemv.py OUT.json

Why: served for real, a Qwen2.5-32B-shaped model's decode steps took 12-15% longer than emulated
(vllm_32b_2026-12-03a: 19.0 ms at batch 1 against 16.7), where the 8B model's match. The emulator times each
projection (QKV, O, gate-up, down) from rows measured with two weight buffers in turn. Here, per model shape
and batch size M:
  iso    each projection in a CUDA graph of 8 launches over two weight buffers (as the profile's rows)
  stream one graph of every layer's four projections, each layer on its own weights (the model's footprint:
         61 GB for the 32B shape), replayed 20 times back to back, and 5 times after 100 ms idle each
  reuse  the same graph over one layer's weights (a footprint of one layer)
  bias   the QKV projection alone with a bias (Qwen2's attention has one: F.linear with a bias goes through
         cuBLASLt's bias epilogue, which the emulator predicts from rows without one)
Weights are drawn from a normal distribution (--init randn, the default): a compute-bound GEMM draws less
power on zeros and runs faster. decode_gemv_2026-12-03 was measured with --init empty (zeros on a fresh
card) and without the bias rows.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

MODELS = {  # layers, hidden, (N, K) of QKV, O, gate-up, down
    "llama3-8b": (32, [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]),
    "qwen2.5-32b": (64, [(7168, 5120), (5120, 5120), (55296, 5120), (5120, 27648)]),
}


def ev_time(fn, reps):
    out = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        out.append(e0.elapsed_time(e1))
    return out


def capture(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--init", choices=("randn", "empty"), default="randn")
    a = ap.parse_args()
    res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "init": a.init, "models": {}}
    bf = torch.bfloat16

    def weight(n, k):
        w = torch.empty(n, k, device="cuda", dtype=bf)
        return w.normal_(0, 0.02) if a.init == "randn" else w

    for name, (layers, shapes) in MODELS.items():
        t0 = time.time()
        W = [[weight(n, k) for (n, k) in shapes] for _ in range(layers)]
        out = {}
        for M in (1, 8, 64, 256):
            xs = {k: torch.randn(M, k, device="cuda", dtype=bf) for (_, k) in shapes}
            row = {"iso_us": []}
            for i, (n, k) in enumerate(shapes):
                g = capture(lambda: [F.linear(xs[k], W[j % 2][i]) for j in range(8)])
                row["iso_us"].append(statistics.median(ev_time(g.replay, 5)) * 1e3 / 8)
                del g
            n, k = shapes[0]
            b = torch.randn(n, device="cuda", dtype=bf)
            g = capture(lambda: [F.linear(xs[k], W[j % 2][0], b) for j in range(8)])
            row["qkv_bias_us"] = statistics.median(ev_time(g.replay, 5)) * 1e3 / 8
            del g

            def step(reuse):
                for li in range(layers):
                    for i, (n, k) in enumerate(shapes):
                        F.linear(xs[k], W[0 if reuse else li][i])
            for kind, reuse in (("stream", False), ("reuse", True)):
                g = capture(lambda: step(reuse))
                row[kind + "_back_to_back_ms"] = ev_time(g.replay, 20)
                cool = []
                for _ in range(5):
                    time.sleep(0.1)
                    cool += ev_time(g.replay, 1)
                row[kind + "_after_idle_ms"] = cool
                del g
            row["sum_iso_ms"] = sum(row["iso_us"]) * layers / 1e3
            out[str(M)] = row
            print(name, M, json.dumps({k: (round(v, 3) if isinstance(v, float) else
                                          [round(x, 3) for x in v]) for k, v in row.items()}), flush=True)
        res["models"][name] = {"layers": layers, "shapes": shapes, "by_m": out, "seconds": time.time() - t0}
        del W
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
