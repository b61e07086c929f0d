"""How many of the stream queue's slots one vLLM eager step (execute_model) takes on a real GPU.

    python vllm_queue_slots.py --model integrations/models/llama3-8b-shape --out OUT.json

A stream holds at most about 1022 unfinished operations; the next launch waits for the oldest
(predictors/data/h200/launch_queue_2026-12-01). Under serving, vLLM's eager prefill steps (more tokens than
the largest CUDA graph) queue behind the previous step and their forward waits for the GPU
(predictors/data/h200/vllm_2026-12-01p), which says a step takes far more slots than the emulator's count
of its launches. This measures it: the engine runs in this process; before an eager step's
execute_model, the GPU is kept busy for 300 ms (one torch.cuda._sleep kernel) and K one-element adds are
queued behind it. execute_model then blocks (takes about 300 ms) exactly when K + its own slots reach the
queue's depth; a binary search over K finds the smallest K that blocks, and slots = 1021 - K.
Under `timewarp run` the shim's count of queued operations (tw_ops_queued) is reported instead.
"""
import argparse
import ctypes
import json
import random
import time

from vllm_offline import engine, fresh_prompt

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--cases", default="768x1,2048x1,4000x2,1000x8,8000x1",
                help="prompt length x prompts per generate (one prefill step each)")
a = ap.parse_args()

import torch  # noqa: E402
import vllm.v1.worker.gpu.model_runner as mr  # noqa: E402
from gpu_helpers import busy  # noqa: E402

try:
    _ops = ctypes.CDLL(None).tw_ops_queued
    _ops.restype, _ops.argtypes = ctypes.c_uint64, [ctypes.c_int]
except AttributeError:
    _ops = None

state = {"K": None, "exec_ms": None, "ops": None, "tokens": None}
_x = []
orig = mr.GPUModelRunner.execute_model


def execute_model(self, scheduler_output, *args, **kwargs):
    n = scheduler_output.total_num_scheduled_tokens
    if state["K"] is None or n <= 512:
        return orig(self, scheduler_output, *args, **kwargs)
    if not _x:
        _x.append(torch.zeros(1, device="cuda"))
    torch.cuda.synchronize()
    if _ops is None:
        busy(300.0)
        for _ in range(state["K"]):
            _x[0].add_(1)
    o0 = _ops(torch.cuda.current_device()) if _ops else None
    t0 = time.perf_counter()
    r = orig(self, scheduler_output, *args, **kwargs)
    state["exec_ms"] = (time.perf_counter() - t0) * 1e3
    state["ops"] = _ops(torch.cuda.current_device()) - o0 if _ops else None
    state["tokens"] = n
    return r


mr.GPUModelRunner.execute_model = execute_model

llm, sp = engine(a.model)
rng = random.Random(0)


def prompts(length: int, count: int) -> list:
    return [fresh_prompt(rng, length) for _ in range(count)]


def run(length: int, count: int, k: int) -> dict:
    state.update(K=k, exec_ms=None, ops=None, tokens=None)
    llm.generate(prompts(length, count), sp, use_tqdm=False)
    state["K"] = None
    return dict(state)


out = {"gpu": torch.cuda.get_device_name(0), "emulated": _ops is not None, "cases": []}
for case in a.cases.split(","):
    length, count = (int(v) for v in case.split("x"))
    run(length, count, 0)                   # warm: this shape's first step
    if _ops is not None:
        r = run(length, count, 0)
        row = {"case": case, "tokens": r["tokens"], "ops": r["ops"], "exec_ms": r["exec_ms"]}
    else:
        base = run(length, count, 0)
        lo, hi, probes = 0, 1021, []
        if base["exec_ms"] < 150:            # no block even with nothing queued ahead: slots < 1021
            while lo < hi:                     # smallest K that blocks
                mid = (lo + hi) // 2
                r = run(length, count, mid)
                probes.append((mid, round(r["exec_ms"], 1)))
                if r["exec_ms"] > 150:
                    hi = mid
                else:
                    lo = mid + 1
        row = {"case": case, "tokens": base["tokens"], "k_block": lo, "slots": 1021 - lo,
               "exec_ms_k0": base["exec_ms"], "probes": probes}
    out["cases"].append(row)
    print(json.dumps(row), flush=True)
with open(a.out, "w") as f:
    json.dump(out, f, indent=1)
