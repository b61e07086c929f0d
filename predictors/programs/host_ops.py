"""Host cost of the eager operations of a Llama layer, at decode and prefill shapes (issue 3, host time).

    python host_ops.py [--quick]

For each operation: the host time of one call, measured as the time to enqueue a burst of calls without
synchronizing (perf_counter before and after, / calls; the burst is short enough that the GPU's queue never
fills, so the host never waits), median of several bursts. Also the enqueue time of whole forwards of a
4-layer Llama-3-8B-shaped transformers model (prefill of 512 tokens, one decode step), and of a
torch.compile'd function. Prints one JSON object {name: microseconds}. Runs unmodified on a real GPU and under
`timewarp run`; comparing the two says which operations' host work the emulator charges too little or too
much.
"""
import argparse
import functools
import json

import torch
import torch.nn.functional as F

import host_timing  # this folder's: the burst timing both host programs use

ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
a = ap.parse_args()
BURSTS = 3 if a.quick else 9
CALLS = 20


host_us = functools.partial(host_timing.host_us, calls=CALLS, bursts=BURSTS)


res = {"torch": torch.__version__}
bf = torch.bfloat16
with torch.no_grad():
    res["empty_loop"] = host_us(lambda: None)
    for tag, m in (("m1", 1), ("m8", 8), ("m512", 512)):
        x = torch.randn(m, 4096, device="cuda", dtype=bf)
        xf = x.float()
        res[f"add_{tag}"] = host_us(lambda: x + x)
        res[f"mul_{tag}"] = host_us(lambda: x * x)
        res[f"neg_{tag}"] = host_us(lambda: -x)
        res[f"silu_{tag}"] = host_us(lambda: F.silu(x))
        res[f"to_float_{tag}"] = host_us(lambda: x.to(torch.float32))
        res[f"pow_{tag}"] = host_us(lambda: xf.pow(2))
        res[f"mean_{tag}"] = host_us(lambda: xf.mean(-1, keepdim=True))
        res[f"cat_{tag}"] = host_us(lambda: torch.cat([x, x], dim=-1))
        for n in (1024, 4096, 14336):
            w = torch.randn(n, 4096, device="cuda", dtype=bf)
            res[f"linear_{tag}_n{n}"] = host_us(lambda: F.linear(x, w))
            del w
    for L, q_len, tag in ((192, 1, "decode"), (512, 512, "prefill")):
        q = torch.randn(1, 32, q_len, 128, device="cuda", dtype=bf)
        k = torch.randn(1, 32, L, 128, device="cuda", dtype=bf)
        res[f"sdpa_{tag}"] = host_us(lambda: F.scaled_dot_product_attention(q, k, k, is_causal=q_len > 1))

    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                      rope_theta=500000.0, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(bf).eval()
    ids = torch.randint(0, 128000, (1, 512), device="cuda")
    res["llama4_prefill_512"] = host_us(lambda: model(ids), calls=1, bursts=BURSTS + 2)
    for b in (1, 8):
        prompt = torch.randint(0, 128000, (b, 128), device="cuda")
        try:
            cache = DynamicCache(config=cfg)
        except TypeError:  # transformers before 5.x
            cache = DynamicCache()
        model(prompt, past_key_values=cache, use_cache=True)
        nxt = prompt[:, -1:]
        # one decode step after another: the cache grows by one token per call (128 -> about 150)
        res[f"llama4_decode_b{b}"] = host_us(lambda: model(nxt, past_key_values=cache, use_cache=True), calls=1,
                                             bursts=BURSTS + 10)

    y = torch.randn(64, 1024, device="cuda")
    f = torch.compile(lambda t: (F.silu(t) * t + 1).sum(-1))
    res["compiled_fn"] = host_us(lambda: f(y))
print(json.dumps(res))
