"""How the H200 slows under sustained work (its 700 W power cap): every kernel's duration over time.

    python3 power_dynamics.py OUT.json           the first set (power_2026-11-30)
    python3 power_dynamics.py OUT.json second    the second set: duty cycles, recovery, a mixed prefill layer
    python3 power_dynamics.py OUT.json third     the third set: shorter idle gaps, copies or adds instead of idle

Each experiment starts after 3 s of idle (the card cools down to its idle clock) and times every launch
with its own pair of CUDA events, so the duration of launch i against its start time is the throttling
curve:
  gemm8192      bf16 8192^3 matmuls back to back for 3 s (compute-bound, about 1.4 ms each at full clock)
  gemm4096      bf16 4096^3 matmuls back to back for 2 s (about 0.2 ms each)
  gemm_duty50   8192^3 matmuls in bursts of 20 ms, then 20 ms idle, for 3 s
  copy1g        1 GiB device-to-device copies back to back for 2 s (memory-bound)
  gemm20        the 20 matmuls of predictors/programs/device_basics.py (the whole-program check), 5 times
    with 1 s between
Second set:
  gemm_duty30   8192^3 matmuls in bursts of 10 ms, then 25 ms idle, for 3 s (does a low duty throttle?)
  gemm_duty60   bursts of 30 ms, then 20 ms idle, for 3 s
  recover_*     1 s of back-to-back 8192^3 matmuls, then idle for 0.1, 0.3, 1 or 2 s, then 20 matmuls:
                how long the card takes to return to its full clock
  prefill8k     a Llama-3-8B-shaped layer at 8192 tokens (RMSNorm, QKV, causal SDPA, O, SwiGLU MLP, residual
                adds; bf16, eager), one launch = one layer, back to back for 3 s: a mixed, mostly
                compute-bound workload
Third set (power_dynamics.py OUT.json third):
  recover_*     as above, with idle gaps of 30, 45, 60 and 75 ms: where between 25 ms (no) and 100 ms (yes)
                an idle gap restores the clock
  copies_after  1 s of matmuls, then 150 ms of back-to-back 1 GiB copies (no idle), then 20 matmuls: whether
                memory-bound work keeps the clock down
  adds_after    the same with 150 ms of back-to-back small adds (launch-bound, the GPU mostly idle)
  rows_*        the pattern of a microbenchmark's rows: 20 ms of matmuls, then an idle gap (40, 60, 80 ms),
                for 2 s
Ramp set (power_dynamics.py OUT.json ramp): the first kernels after a pause. Each trial warms the card with
20 ms of 8192^3 matmuls (below the onset), then waits (idle for 0.2-50 ms, or busy for 20 ms with
memory-bound adds of 256 MiB that keep the SMs working), then times 5 launches of one kernel: the 8192^3
and 4096^3 matmuls, a 4096x4096 GEMV (memory-bound), an add of 2^24 elements; 5 trials per case:
  ramp_<kernel>_<gap ms>    {"t_ms", "dur_ms"} of every trial's 5 launches, trial after trial
Writes {experiment: {"t_ms": [...], "dur_ms": [...]}} plus the card's name and limits. Nothing here changes
GPU clocks or settings.
"""
import json
import subprocess
import sys
import time

import torch

out_path = sys.argv[1]
dev = torch.device("cuda")
res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
try:
    res["smi"] = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm,power.limit,temperature.gpu",
                                 "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except OSError:
    pass


def run(name, launch, seconds=None, count=None, burst_ms=None, idle_ms=None, pause_s=3.0):
    torch.cuda.synchronize()
    time.sleep(pause_s)
    base = torch.cuda.Event(enable_timing=True)
    base.record()
    evs = []
    t_end = time.perf_counter() + (seconds or 1e9)
    n = 0
    while (count is None or n < count) and time.perf_counter() < t_end:
        b_end = time.perf_counter() + burst_ms / 1e3 if burst_ms else None
        while True:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            launch()
            e1.record()
            evs.append((e0, e1))
            n += 1
            if len(evs) % 64 == 0:
                evs[-32][1].synchronize()  # keep the host at most ~32 launches ahead
            if b_end is None or time.perf_counter() >= b_end or (count is not None and n >= count):
                break
        if idle_ms:
            torch.cuda.synchronize()
            time.sleep(idle_ms / 1e3)
    torch.cuda.synchronize()
    res[name] = {"t_ms": [round(base.elapsed_time(a), 4) for a, _ in evs],
                 "dur_ms": [round(a.elapsed_time(b), 5) for a, b in evs]}
    d = res[name]["dur_ms"]
    print(f"{name}: {len(d)} launches; first 10 median {sorted(d[:10])[5 if len(d) >= 10 else 0]:.4f} ms, "
          f"last 10 {sorted(d[-10:])[5 if len(d) >= 10 else 0]:.4f} ms", flush=True)


def busy_for(work, seconds, sync_every=64):
    """Launch work() back to back for `seconds` of host time, the host at most sync_every launches ahead."""
    t_end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < t_end:
        work()
        n += 1
        if n % sync_every == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


a8 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b8 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
c8 = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
gemm8 = lambda: torch.mm(a8, b8, out=c8)  # noqa: E731
which = sys.argv[2] if len(sys.argv) > 2 else "first"
if which not in ("first", "second", "third", "ramp"):
    sys.exit(f"power_dynamics.py: unknown set {which!r} (first, second, third or ramp)")
if which == "ramp":
    a4 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    c4 = torch.empty(4096, 4096, device=dev, dtype=torch.bfloat16)
    v = torch.randn(4096, 1, device=dev, dtype=torch.bfloat16)
    x24 = torch.randn(1 << 24, device=dev)
    big = torch.randn(1 << 26, device=dev)       # 256 MiB: a memory-bound add that keeps the SMs busy
    kernels = {"mm8192": gemm8, "mm4096": lambda: torch.mm(a4, a4, out=c4), "gemv4096": lambda: torch.mm(a4, v),
               "add16m": lambda: x24.add_(1.0)}
    for k in kernels.values():
        k()
    torch.cuda.synchronize()
    time.sleep(1.0)
    for kname, k in kernels.items():
        for gap in (0.2, 0.5, 1, 2, 5, 10, 20, 50, "busy"):
            t_all, d_all = [], []
            for _ in range(5):
                for _ in range(15):                       # ~20 ms of work, below the onset
                    gemm8()
                torch.cuda.synchronize()
                if gap == "busy":
                    busy_for(lambda: big.add_(1.0), 0.02, sync_every=1)
                else:
                    t_end = time.perf_counter() + gap / 1e3
                    while time.perf_counter() < t_end:    # spin: sleep's granularity is too coarse at 0.2 ms
                        pass
                evs = []
                for _ in range(5):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    k()
                    e1.record()
                    evs.append((e0, e1))
                torch.cuda.synchronize()
                t_all += [round(evs[0][0].elapsed_time(a), 4) for a, _ in evs]
                d_all += [round(a.elapsed_time(b), 5) for a, b in evs]
                time.sleep(0.1)                           # cool down between trials
            res[f"ramp_{kname}_{gap}"] = {"t_ms": t_all, "dur_ms": d_all}
        print(kname, {g: sorted(res[f"ramp_{kname}_{g}"]["dur_ms"][0::5])[2] for g in (0.2, 1, 5, 20, 50, "busy")},
              "steady", sorted(res[f"ramp_{kname}_50"]["dur_ms"][4::5])[2], flush=True)
elif which == "third":
    src = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    dst = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    small = torch.ones(1024, device=dev)
    for _ in range(3):
        gemm8()
        dst.copy_(src)
    torch.cuda.synchronize()

    for gap in (0.03, 0.045, 0.06, 0.075):
        run(f"recover_warm_{gap}", gemm8, seconds=1)
        run(f"recover_{gap}", gemm8, count=20, pause_s=gap)
    for name, work in (("copies_after", lambda: dst.copy_(src)), ("adds_after", lambda: small.add_(1))):
        run(f"{name}_warm", gemm8, seconds=1)
        busy_for(work, 0.15)
        run(name, gemm8, count=20, pause_s=0.0)
    for gap in (40, 60, 80):
        run(f"rows_{gap}", gemm8, seconds=2, burst_ms=20, idle_ms=gap)
elif which == "first":
    a4 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    c4 = torch.empty(4096, 4096, device=dev, dtype=torch.bfloat16)
    src = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    dst = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    for _ in range(3):
        torch.mm(a8, b8, out=c8)
        torch.mm(a4, a4, out=c4)
        dst.copy_(src)
    torch.cuda.synchronize()

    run("gemm8192", gemm8, seconds=3)
    run("gemm4096", lambda: torch.mm(a4, a4, out=c4), seconds=2)
    run("gemm_duty50", gemm8, seconds=3, burst_ms=20, idle_ms=20)
    run("copy1g", lambda: dst.copy_(src), seconds=2)
    for i in range(5):
        run(f"gemm20_{i}", gemm8, count=20, pause_s=1.0)
elif which == "second":
    import torch.nn.functional as F
    T, H, I, NH, KV, D = 8192, 4096, 14336, 32, 8, 128
    bf = dict(device=dev, dtype=torch.bfloat16)
    x = torch.randn(T, H, **bf)
    wn = torch.ones(H, **bf)
    wqkv = torch.randn((NH + 2 * KV) * D, H, **bf) * 0.02
    wo = torch.randn(H, NH * D, **bf) * 0.02
    wgu = torch.randn(2 * I, H, **bf) * 0.02
    wd = torch.randn(H, I, **bf) * 0.02

    def layer():
        h = F.rms_norm(x, (H,), wn, 1e-5)
        q, k, v = F.linear(h, wqkv).split([NH * D, KV * D, KV * D], dim=-1)
        q = q.view(1, T, NH, D).transpose(1, 2)
        k = k.view(1, T, KV, D).transpose(1, 2)
        v = v.view(1, T, KV, D).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        h2 = x + F.linear(a.transpose(1, 2).reshape(T, NH * D), wo)
        g, u = F.linear(F.rms_norm(h2, (H,), wn, 1e-5), wgu).chunk(2, dim=-1)
        return h2 + F.linear(F.silu(g) * u, wd)

    for _ in range(3):
        gemm8()
        layer()
    torch.cuda.synchronize()
    run("gemm_duty30", gemm8, seconds=3, burst_ms=10, idle_ms=25)
    run("gemm_duty60", gemm8, seconds=3, burst_ms=30, idle_ms=20)
    for gap in (0.1, 0.3, 1.0, 2.0):
        run(f"recover_warm_{gap}", gemm8, seconds=1)
        run(f"recover_{gap}", gemm8, count=20, pause_s=gap)
    run("prefill8k", layer, seconds=3)
with open(out_path, "w") as f:
    json.dump(res, f)
print("done", flush=True)
