"""How busy neighbours and idle spells change the host cost of launch-heavy PyTorch code on this host (the
H200 lease's): the same eager launch loop alone, beside K busy Python processes, and right after an idle
sleep; the CPU clock each time.

Why: on the real H200 (lease vllm_2026-12-02w, case 15) the first forward of each wave of requests, one
640-token prompt run eagerly while the API server tokenizes the wave's other prompts, took 21-27 ms of the
EngineCore's CPU (28-33 ms of wall time), and the next forward, 7,041 tokens with the API server idle, 20 ms.
host_contention.py measured a plain Python loop (1.16-1.36x beside 1-15 others); this measures code that
launches kernels, and whether a core that idled is slower to start.

    python3 predictors/calibration/launch_contention.py OUT.json
"""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

BUSY = "x = 0\nwhile True: x += 1\n"
PY_LOOP = 3_000_000


def launch_loop(x: torch.Tensor, n: int = 2000) -> tuple[float, float]:
    """n rounds of three small eager ops (about the per-op host path of an eager forward); CPU s, wall s"""
    torch.cuda.synchronize()
    c, w = time.thread_time(), time.perf_counter()
    for _ in range(n):
        y = x * 2.0
        y.add_(1.0)
        x.copy_(y)
    torch.cuda.synchronize()
    return time.thread_time() - c, time.perf_counter() - w


def py_loop() -> float:
    c = time.thread_time()
    x = 0
    for i in range(PY_LOOP):
        x += i & 7
    return time.thread_time() - c


def mhz() -> list[float]:
    out = []
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("cpu MHz"):
            out.append(float(line.split(":")[1]))
    return out


def measure(label: str, reps: int = 7) -> dict:
    x = torch.zeros(4096, device="cuda")
    launch_loop(x, 200)
    ls = [launch_loop(x) for _ in range(reps)]
    ps = [py_loop() for _ in range(3)]
    m = mhz()
    r = {"launch_cpu_s": statistics.median(c for c, _ in ls), "launch_wall_s": statistics.median(w for _, w in ls),
         "launch_cpu_all": [round(c, 5) for c, _ in ls], "py_cpu_s": statistics.median(ps),
         "mhz_median": statistics.median(m) if m else None, "mhz_min": min(m) if m else None}
    print(label, json.dumps(r), flush=True)
    return r


def main() -> None:
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "ncpu": os.cpu_count(),
           "affinity": len(os.sched_getaffinity(0)), "by_neighbours": {}, "after_idle": {}}
    torch.zeros(1, device="cuda")
    for k in (0, 1, 2, 4, 8, 15):
        bg = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(k)]
        time.sleep(0.5)
        try:
            out["by_neighbours"][k] = measure(f"neighbours={k}")
        finally:
            for p in bg:
                p.kill()
                p.wait()
    # an idle spell before each loop: does a core that slept start slower?
    x = torch.zeros(4096, device="cuda")
    for idle in (0.0, 0.005, 0.05, 0.5):
        rs = []
        for _ in range(5):
            time.sleep(idle)
            rs.append(launch_loop(x, 300))
        out["after_idle"][idle] = {"cpu_s": [round(c, 5) for c, _ in rs], "wall_s": [round(w, 5) for _, w in rs]}
        print("idle", idle, out["after_idle"][idle], flush=True)
    out["idle_ramp"] = idle_ramp(x)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


def idle_ramp(x: torch.Tensor, reps: int = 15, chunks: int = 8, per: int = 40) -> dict:
    """After each idle spell, the launch loop in `chunks` consecutive pieces of `per` rounds (about 1 ms
    each): how long a slowdown after idling lasts. Per idle spell, per piece, the median CPU us over reps."""
    out = {}
    for idle in (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.2):
        per_chunk = [[] for _ in range(chunks)]
        for _ in range(reps):
            if idle:
                time.sleep(idle)
            for j in range(chunks):
                per_chunk[j].append(launch_loop(x, per)[0])
        out[idle] = [round(statistics.median(c) * 1e6, 1) for c in per_chunk]
        print("ramp", idle, out[idle], flush=True)
    return out


if __name__ == "__main__":
    main()
