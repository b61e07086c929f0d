"""torch.compile (Inductor, Triton kernels) and a transformers Llama model on the virtual GPU."""
import json
import time

import torch

r = {}


def f(x, y):
    return torch.nn.functional.silu(x) * y + x.sum(dim=-1, keepdim=True)


cf = torch.compile(f)
x = torch.randn(512, 1024, device="cuda")
y = torch.randn(512, 1024, device="cuda")
out = cf(x, y)
torch.cuda.synchronize()
r["compile_shape"] = list(out.shape)
r["compile_dtype"] = str(out.dtype)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record()
for _ in range(10):
    out = cf(x, y)
e1.record()
torch.cuda.synchronize()
r["compile_10_ms"] = e0.elapsed_time(e1)

from transformers import LlamaConfig, LlamaForCausalLM

cfg = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                  eos_token_id=2, bos_token_id=1, pad_token_id=0)
torch.manual_seed(0)
model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
ids = torch.randint(3, 1000, (2, 16), device="cuda")
with torch.no_grad():
    t0 = time.perf_counter()
    logits = model(ids).logits
    torch.cuda.synchronize()
    r["forward_s"] = time.perf_counter() - t0
    r["logits_shape"] = list(logits.shape)
    r["logits_dtype"] = str(logits.dtype)
    if "--generate" in __import__("sys").argv:
        t0 = time.perf_counter()
        gen = model.generate(ids, max_new_tokens=8, do_sample=False)
        torch.cuda.synchronize()
        r["generate_s"] = time.perf_counter() - t0
        r["generate_shape"] = list(gen.shape)
print(json.dumps(r))
