"""A Llama-3-8B-shaped transformers model, timed the way a user times it (issue 3, whole programs).

    python hf_llama8b.py [--layers N] [--quick]

Random bf16 weights (no download). Prints one JSON object:
  prefill_ms_events / prefill_ms_wall   one forward over a 512-token prompt, batch 1 (CUDA events; and
                                        time.perf_counter() around the synchronized call), median of 5 after 2
                                        warm-ups
  generate_ms_per_token                 greedy generate() of 64 new tokens from a 128-token prompt, batch 1,
                                        perf_counter around the synchronized call / 64, median of 3 after 1 warm-up
  generate_b8_ms_per_token              the same at batch 8
  first_forward_s                       the very first forward (lazy initialisation, cuBLAS/cuDNN plans)
Runs unmodified on a real GPU and under `timewarp run`.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=32)
ap.add_argument("--quick", action="store_true", help="fewer repeats (for tests)")
a = ap.parse_args()
reps = 1 if a.quick else 5

cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=a.layers,
                  num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0,
                  rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001,
                  pad_token_id=128001)
torch.manual_seed(0)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
model.generation_config.pad_token_id = cfg.pad_token_id
r = {"layers": a.layers, "torch": torch.__version__}
try:
    import transformers
    r["transformers"] = transformers.__version__
except Exception:  # noqa: BLE001
    pass


def sync_time(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


prompt = torch.randint(0, 128000, (1, 512), device="cuda")
with torch.no_grad():
    r["first_forward_s"], _ = sync_time(lambda: model(prompt[:, :16]))
    for _ in range(2):
        model(prompt)
    ev, wall = [], []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        e0.record()
        logits = model(prompt).logits
        e1.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        ev.append(e0.elapsed_time(e1))
    r["prefill_ms_events"] = statistics.median(ev)
    r["prefill_ms_wall"] = statistics.median(wall)
    r["logits_shape"] = list(logits.shape)

    for batch, key in ((1, "generate_ms_per_token"), (8, "generate_b8_ms_per_token")):
        ids = torch.randint(0, 128000, (batch, 128), device="cuda")
        mask = torch.ones_like(ids)
        gen = lambda: model.generate(ids, attention_mask=mask, max_new_tokens=64, min_new_tokens=64,  # noqa: E731
                                     do_sample=False)
        sync_time(gen)
        times = []
        for _ in range(max(1, reps - 2)):
            s, out = sync_time(gen)
            times.append(s * 1e3 / 64)
        r[key] = statistics.median(times)
        r[key.replace("ms_per_token", "shape")] = list(out.shape)
print(json.dumps(r))
