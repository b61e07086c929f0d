"""Does the time of a tiny graph node depend on what the GPU ran before it? (H200 lease, about 2 minutes)

The elementwise section of microbench_h200.py times every bf16 op of 1-128 Ki elements 0.15-0.2 us per
graph node slower than the fp32 op of the same size (a D2D copy of 4 KiB: 1.42 us as bf16, 1.24 us as fp32),
and both slower than the memcpy section's D2D copies (1.03 us). A memcpy does not know its dtype, so either
the order of measurement (bf16 first, after the host section left the GPU idle) or the buffers differ. This
script times the same tiny nodes in several states of the GPU and samples its clocks alongside:

  idle        after 3 s with nothing running
  repeat      right after `idle`
  after_gemm  after 300 ms of 8192^3 bf16 GEMMs
  interleaved each measurement preceded by 20 ms of GEMMs
  reversed    the ops in reverse order, after 3 s idle
  after_profiler     right after a torch.profiler session (CUPTI) over the same ops; _5s: 5 s later
  ramp        3 s of back-to-back replays of a 1024-node graph of 1-Ki-element adds, from idle

    python3 predictors/calibration/clock_state_probe.py $OUT          # the phases above
    python3 predictors/calibration/clock_state_probe.py $OUT during   # idle, inside a profiler session, after

Answer (predictors/data/h200/graph_nocupti_2026-12-04): neither the GPU's state nor the order nor the dtype;
a torch.profiler session earlier in the process, which the elementwise section runs before timing each op.

Writes $OUT/clock_state.json (per-node slopes by phase and op, replay times of the ramp) and $OUT/smi.csv
(nvidia-smi every 50 ms; phase start times in clock_state.json are on the same wall clock).
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
NB = 64
INNER = 256
REPS = 7


def sync():
    torch.cuda.synchronize()


def ev_time(fn):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1e3   # us


def separate(dtype, numel):
    X = [torch.randn(numel, device=dev).to(dtype) for _ in range(NB)]
    Y = [torch.randn(numel, device=dev).to(dtype) for _ in range(NB)]
    return X, Y


big_a = torch.zeros(256 << 20, dtype=torch.uint8, device=dev)
big_b = torch.zeros(256 << 20, dtype=torch.uint8, device=dev)


def sliced(nbytes):
    def fn(j):
        off = (j * nbytes) % ((256 << 20) - nbytes) // 256 * 256
        big_b[off:off + nbytes].copy_(big_a[off:off + nbytes])
    return fn


def make_ops():
    ops = {}
    for name, dt, n in (("bf16_2K", torch.bfloat16, 1024), ("fp32_4K", torch.float32, 1024),
                        ("u8_4K", torch.uint8, 4096), ("bf16_4K", torch.bfloat16, 2048),
                        ("fp32_512K", torch.float32, 131072), ("bf16_256K", torch.bfloat16, 131072)):
        X, Y = separate(dt, n)
        ops["copy_" + name] = (lambda X, Y: (lambda j: Y[j % NB].copy_(X[j % NB])))(X, Y)
        if dt != torch.uint8 and n == 1024:
            ops["add_" + name] = (lambda X, Y: (lambda j: X[j % NB] + Y[j % NB]))(X, Y)
    ops["slice_4K"] = sliced(4096)
    ops["slice_512K"] = sliced(512 << 10)
    return ops


stream = torch.cuda.Stream()


def capture(fn, n):
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for j in range(2):
            fn(j)
    torch.cuda.current_stream().wait_stream(stream)
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        for j in range(n):
            fn(j % INNER)
    g.replay()
    sync()
    return g


def slope(fn):
    g1, g4 = capture(fn, INNER), capture(fn, 4 * INNER)
    t1 = statistics.median(ev_time(g1.replay) for _ in range(REPS))
    t4 = statistics.median(ev_time(g4.replay) for _ in range(REPS))
    del g1, g4
    return {"node_us": (t4 - t1) / (3 * INNER), "t_inner_us": t1 / INNER}


ga = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
gb = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)


def gemms(ms):
    t = time.perf_counter()
    while (time.perf_counter() - t) * 1e3 < ms:
        for _ in range(5):
            ga @ gb
        sync()


def main():
    try:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,"
         "clocks_throttle_reasons.active", "--format=csv,noheader", "-lms", "50"],
            stdout=open(os.path.join(OUT, "smi.csv"), "w"), stderr=subprocess.STDOUT)
    except OSError:   # no nvidia-smi (under emulation): slopes only
        smi = None
    ops = make_ops()
    gemms(200)
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "phases": {}, "phase_start": {}}
    names = list(ops)

    def phase(label, order, before=None, idle_s=0.0):
        sync()
        if idle_s:
            time.sleep(idle_s)
        res["phase_start"][label] = time.time()
        rows = {}
        for name in order:
            if before:
                before()
            rows[name] = slope(ops[name])
        res["phases"][label] = rows
        print(label, {k: round(v["node_us"], 3) for k, v in rows.items()}, flush=True)

    phase("idle", names, idle_s=3.0)
    if len(sys.argv) > 2 and sys.argv[2] == "during":
        return during(ops, names, res, phase)
    phase("repeat", names)
    gemms(300)
    phase("after_gemm", names)
    phase("interleaved", names, before=lambda: gemms(20))
    phase("reversed", names[::-1], idle_s=3.0)

    # the same after one torch.profiler (CUPTI) session, and 5 s later: does the profiler leave a cost behind?
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for name in names:
            for j in range(3):
                ops[name](j)
        sync()
    res["profiled_us"] = [(e.name, e.device_time) for e in prof.events() if e.device_time > 0][:200]
    phase("after_profiler", names)
    phase("after_profiler_5s", names, idle_s=5.0)

    # ramp: one graph replayed back to back from idle; per-replay time and wall time
    g = capture(ops["add_bf16_2K"], 4 * INNER)
    sync()
    time.sleep(3.0)
    res["phase_start"]["ramp"] = time.time()
    ramp = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 3.0:
        ramp.append((round(time.perf_counter() - t0, 4), ev_time(g.replay) / (4 * INNER)))
    res["ramp_add_bf16_2K_us_per_node"] = ramp[::max(1, len(ramp) // 300)]
    print("ramp first/last", ramp[0], ramp[len(ramp) // 2], ramp[-1], flush=True)
    time.sleep(0.3)
    if smi:
        smi.terminate()
    with open(os.path.join(OUT, "clock_state.json"), "w") as f:
        json.dump(res, f, indent=1)


def during(ops, names, res, phase):
    """`clock_state_probe.py OUT during`: the slopes inside a torch.profiler session (as vLLM's profiler
    records its kernels), with every kernel's CUPTI start and duration in the replays, then after it."""
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        phase("during_profiler", names)
        sync()
    ev = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events() if e.device_time > 0]
    res["during_trace_head"] = ev[:50]
    # per op: the kernels of its replays in order; start-to-start and duration medians, as the recorder sees them
    seen = {}
    for name, t0, t1 in sorted(ev, key=lambda e: e[1]):
        seen.setdefault(name, []).append((t0, t1))
    stats = {}
    for name, spans in seen.items():
        if len(spans) < 50:
            continue
        s2s = [b[0] - a[0] for a, b in zip(spans, spans[1:]) if 0 < b[0] - a[0] < 20]
        dur = [b - a for a, b in spans]
        stats[name[:120]] = {"n": len(spans), "dur_us": statistics.median(dur),
                             "start_to_start_us": statistics.median(s2s) if s2s else None}
    res["during_cupti"] = stats
    print(json.dumps(stats, indent=0), flush=True)
    phase("after_profiler", names)
    with open(os.path.join(OUT, "clock_state_during.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
