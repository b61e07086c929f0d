"""Where vLLM's host time goes in one prefill step, on a real GPU and under `timewarp run`, function by function.

    python vllm_eager_profile.py --model integrations/models/llama3-8b-shape --out OUT.json

The engine runs in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0), so one profiler sees the scheduler, the
model runner and the model. For each prompt length (768 and 2048 tokens: more than the largest CUDA-graph
size, launched eagerly; 256: replayed from piecewise graphs) it generates one token for several fresh random
prompts, one at a time (one prefill step each): first timed only (wall time per call), then under cProfile.
Writes one JSON: per length, the wall times and the functions with the most own time and the most
cumulative time. Under emulation, the clocks read (perf_counter, cProfile's) are the virtual ones, so the
two files compare directly (docs/LIMITATIONS.md: vLLM's eager prefill steps took 1.4-2.6x as much host CPU
on the real hosts as emulated).
"""
import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import time

from vllm_offline import engine, fresh_prompt

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--lengths", default="768,2048,256")
ap.add_argument("--n", type=int, default=6, help="prompts per length and pass")
ap.add_argument("--top", type=int, default=80)
ap.add_argument("--no-profile", action="store_true",
                help="time only (with TIMEWARP_VLLM_TIMELINE[_PARTS] the timeline then holds unprofiled steps only)")
a = ap.parse_args()

t0 = time.perf_counter()
llm, sp = engine(a.model)
ready_s = time.perf_counter() - t0
rng = random.Random(0)


def one(length: int) -> float:
    p = fresh_prompt(rng, length)
    t = time.perf_counter()
    llm.generate([p], sp, use_tqdm=False)
    return (time.perf_counter() - t) * 1e3


def top(stats: pstats.Stats, key: str) -> list:
    rows = []
    for (file, line, name), (cc, nc, tt, ct, _callers) in stats.stats.items():
        rows.append({"func": f"{os.path.basename(file)}:{line}:{name}", "file": file, "ncalls": nc,
                     "tottime_ms": tt * 1e3, "cumtime_ms": ct * 1e3})
    rows.sort(key=lambda r: -r[key])
    return rows[:a.top]


result = {"ready_s": ready_s, "lengths": {}}
for length in (int(x) for x in a.lengths.split(",")):
    for _ in range(2):
        one(length)                       # warm-up: first use of the shape
    plain = [one(length) for _ in range(a.n)]
    result["lengths"][str(length)] = {"wall_ms": plain, "wall_ms_median": statistics.median(plain), "calls": a.n}
    if a.no_profile:
        print(f"{length} tokens: {statistics.median(plain):.2f} ms per one-token generate", flush=True)
        continue
    prof = cProfile.Profile()
    prof.enable()
    profiled = [one(length) for _ in range(a.n)]
    prof.disable()
    st = pstats.Stats(prof)
    result["lengths"][str(length)].update({
        "wall_ms_profiled": profiled,
        "by_tottime": top(st, "tottime_ms"), "by_cumtime": top(st, "cumtime_ms"),
    })
    print(f"{length} tokens: {statistics.median(plain):.2f} ms per one-token generate "
          f"({statistics.median(profiled):.2f} profiled)", flush=True)
with open(a.out, "w") as f:
    json.dump(result, f, indent=1)
