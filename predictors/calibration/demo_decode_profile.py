"""Where the demo's decode step spends its host time, op by op (issue 3, whole programs).

Why: `timewarp demo`'s decode (batch 1, 32 layers, plain eager PyTorch) took 12.74 ms per token on one H200
host and 18.74 and 18.33 on two others, with the GPU busy under half the time, while single eager ops
(host_ops.py) cost no more on the slow ones. This times the same decode steps with torch's profiler (CPU
activities: each op's host time) and without it, so the op that costs the hosts more can be named, and runs
unchanged under `timewarp run` for the emulated side.

    python predictors/calibration/demo_decode_profile.py [--steps 16] [--top 30] > profile.json

Prints one JSON object: decode ms per token without the profiler (CUDA events), and per op name (the
profiler's key averages over the profiled steps) its count per token and self CPU µs per call and per token.
"""
import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "integrations"))
import demo  # noqa: E402  (integrations/demo.py: the model the demo runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=16, help="decode steps timed (each way)")
    ap.add_argument("--top", type=int, default=30, help="op names kept, by self CPU time")
    ap.add_argument("--preset", default="llama3-8b", choices=sorted(demo.PRESETS))
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    P = 512
    model = demo.LlamaShaped(torch, dict(demo.PRESETS[a.preset]), max_len=P + 3 * a.steps + 4, batch=1)
    prompt = torch.randint(0, model.cfg["vocab"], (1, P), device="cuda")
    out = {"preset": a.preset, "steps": a.steps, "torch": torch.__version__}
    with torch.inference_mode():
        token = model.forward(prompt, 0)
        model.forward(token, P)   # warm-up of the decode shapes
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for i in range(a.steps):
            token = model.forward(token, P + 1 + i)
        end.record()
        end.synchronize()
        out["decode_ms_per_token"] = start.elapsed_time(end) / a.steps
        out["decode_ms_per_token_perf_counter"] = 1e3 * (time.perf_counter() - t0) / a.steps
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(a.steps):
                token = model.forward(token, P + 1 + a.steps + i)
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        rows.append({"op": e.key, "calls_per_token": e.count / a.steps,
                     "self_cpu_us_per_call": e.self_cpu_time_total / max(e.count, 1),
                     "self_cpu_us_per_token": e.self_cpu_time_total / a.steps,
                     "cpu_us_per_token": e.cpu_time_total / a.steps})
    rows.sort(key=lambda r: -r["self_cpu_us_per_token"])
    out["self_cpu_ms_per_token"] = sum(r["self_cpu_us_per_token"] for r in rows) / 1e3
    out["ops"] = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows[:a.top]]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
