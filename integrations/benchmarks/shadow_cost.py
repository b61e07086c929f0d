"""Benchmark: what the shadow of small results (integrations/torch_shadow.cpp) adds to a transformers
program's charged host time.

    python -m timewarp.integrations.benchmarks.shadow_cost [--calls N]

Runs a 4-layer Llama-3-8B-shaped model (transformers) under `timewarp run` and times each forward with the
shadow turned off and on in turn, in the same process (this machine's speed drifts between processes by more
than the difference): a prefill of 512 tokens, whose activations are large and address-only, and a batch-1
decode step, whose small activations are all shadowed. Per forward it reads the host CPU time the virtual
clock was charged (TIMEWARP_CHARGE_DIR's table, before the host pace: the measure that does not move with
the pace) and the virtual time the forward took. Prints the medians, and the shadow's share of the charge.
The real H200 host does not run the shadow at all, so every microsecond of the difference is error.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

FIELDS = 6  # TW_CHARGE_FIELDS: host Python, virtual Python, host native, virtual native, added, raw (ns)


def program(calls: int) -> None:
    import mmap
    import statistics
    import struct
    import time

    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    with open(os.path.join(os.environ["TIMEWARP_CHARGE_DIR"], f"charge.{os.getpid()}"), "rb") as f:
        tab = mmap.mmap(f.fileno(), FIELDS * 8, prot=mmap.PROT_READ)

    def charged_us() -> float:
        v = struct.unpack(f"<{FIELDS}Q", tab[:FIELDS * 8])
        return (v[0] + v[2]) / 1e3

    cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                      rope_theta=500000.0, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, 128000, (1, 512), device="cuda")
    prompt = torch.randint(0, 128000, (1, 128), device="cuda")
    try:
        cache = DynamicCache(config=cfg)
    except TypeError:  # transformers before 5.x
        cache = DynamicCache()
    with torch.no_grad():
        model(prompt, past_key_values=cache, use_cache=True)
    nxt = prompt[:, -1:]
    work = {"prefill 512 tokens": lambda: model(ids),
            "decode step, batch 1": lambda: model(nxt, past_key_values=cache, use_cache=True)}
    out = {}
    with torch.no_grad():
        for name, fn in work.items():
            got = {False: ([], []), True: ([], [])}
            for i in range(2 * (calls + 2)):
                on = i % 2 == 1
                torch.ops.timewarp_shadow.enable(on)
                torch.cuda.synchronize()
                c0, t0 = charged_us(), time.perf_counter()
                fn()
                t1, c1 = time.perf_counter(), charged_us()
                if i >= 4:  # the first calls warm caches and the allocator
                    got[on][0].append(c1 - c0)
                    got[on][1].append((t1 - t0) * 1e6)
            out[name] = {k: [statistics.median(got[on][j]) for on in (False, True)]
                         for j, k in enumerate(("charged_us", "virtual_us"))}
    torch.ops.timewarp_shadow.enable(True)
    print("RESULT " + json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=40, help="forwards of each kind with the shadow off and on")
    ap.add_argument("--program", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.program:
        program(a.calls)
        return
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TIMEWARP_CHARGE_DIR=d, TIMEWARP_SHADOW="1", TIMEWARP_SHADOW_NATIVE="1")
        r = subprocess.run([sys.executable, "-m", "timewarp.integrations.cli", "run", "--", sys.executable,
                            os.path.abspath(__file__), "--program", "--calls", str(a.calls)],
                           env=env, capture_output=True, text=True)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        sys.exit(f"shadow_cost: the emulated program failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    res = json.loads(lines[-1][len("RESULT "):])
    print(f"{'forward (4-layer Llama-3-8B shape)':<34} {'shadow':>7} {'charged host us':>16} {'virtual us':>11}")
    for name, v in res.items():
        for k, on in enumerate(("off", "on")):
            print(f"{name:<34} {on:>7} {v['charged_us'][k]:>16.1f} {v['virtual_us'][k]:>11.1f}")
        c, t = v["charged_us"], v["virtual_us"]
        print(f"{'':<34} {'added':>7} {c[1] - c[0]:>+16.1f} ({(c[1] / c[0] - 1) * 100:+.1f}%) "
              f"{t[1] - t[0]:>+10.1f} ({(t[1] / t[0] - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
