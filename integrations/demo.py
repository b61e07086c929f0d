"""timewarp's demo: a Llama-shaped transformer's prefill and decode, in plain PyTorch on "cuda".

    timewarp demo [--gpu H200] [-- --preset llama3-8b --batch 1 --prompt 512 --new-tokens 64]

Nothing here knows about timewarp: the same file runs on a real GPU (`python -m timewarp.integrations.demo`,
or `python integrations/demo.py`), which is how its predictions are checked. Under `timewarp demo` the
weights are address ranges on the virtual GPU, the kernels are timed by the predictor instead of executed,
and the times printed (CUDA events and time.perf_counter alike) are the predicted ones. Token ids computed on
the virtual GPU are meaningless (kernels never write), so none are printed.

The model: token embedding, N blocks of (RMSNorm, fused QKV projection, rotary embedding, KV cache,
scaled_dot_product_attention with causal masking and grouped-query heads, output projection, RMSNorm,
SwiGLU MLP), final RMSNorm, LM head, argmax; bf16 weights and activations, random values.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

PRESETS = {
    # name: layers, hidden, heads, kv_heads, ffn, vocab (the shapes of the public configs)
    "llama3-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256),
    "llama3.2-1b": dict(layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192, vocab=128256),
    "tiny": dict(layers=2, hidden=256, heads=4, kv_heads=2, ffn=768, vocab=1024),
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="timewarp demo", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="llama3-8b", help="model shape (default %(default)s)")
    ap.add_argument("--layers", type=int, help="override the preset's number of layers")
    ap.add_argument("--batch", type=int, default=1, help="sequences decoded together (default %(default)s)")
    ap.add_argument("--prompt", type=int, default=512, help="prompt tokens per sequence (default %(default)s)")
    ap.add_argument("--new-tokens", type=int, default=64, help="tokens generated per sequence (default %(default)s)")
    args = ap.parse_args(argv)
    if min(args.batch, args.prompt, args.new_tokens) < 1 or (args.layers is not None and args.layers < 1):
        ap.error("--batch, --prompt, --new-tokens and --layers must be positive")
    return args


class LlamaShaped:
    """Weights and the forward pass, as a serving engine's eager path would run them."""

    def __init__(self, torch, cfg: dict, max_len: int, batch: int, device: str = "cuda"):
        self.t = torch
        self.cfg = cfg
        self.hd = cfg["hidden"] // cfg["heads"]
        dt = self.dtype = torch.bfloat16
        H, KV, D, F, V = cfg["heads"], cfg["kv_heads"], cfg["hidden"], cfg["ffn"], cfg["vocab"]

        def w(*shape):
            return torch.empty(*shape, device=device, dtype=dt).normal_(0.0, 0.02)

        self.embed = w(V, D)
        self.layers = []
        for _ in range(cfg["layers"]):
            self.layers.append(dict(
                norm1=torch.ones(D, device=device, dtype=dt),
                wqkv=w((H + 2 * KV) * self.hd, D),
                wo=w(D, H * self.hd),
                norm2=torch.ones(D, device=device, dtype=dt),
                w_gate_up=w(2 * F, D),
                w_down=w(D, F),
                k_cache=torch.zeros(batch, KV, max_len, self.hd, device=device, dtype=dt),
                v_cache=torch.zeros(batch, KV, max_len, self.hd, device=device, dtype=dt),
            ))
        self.norm = torch.ones(D, device=device, dtype=dt)
        self.lm_head = w(V, D)
        # rotary tables, [max_len, head_dim / 2]
        inv_freq = 1.0 / (500000.0 ** (torch.arange(0, self.hd, 2, device=device, dtype=torch.float32) / self.hd))
        angles = torch.outer(torch.arange(max_len, device=device, dtype=torch.float32), inv_freq)
        self.cos, self.sin = angles.cos().to(dt), angles.sin().to(dt)
        self.positions = torch.arange(max_len, device=device)

    def n_params(self) -> int:
        c = self.cfg
        per_layer = ((c["heads"] + 2 * c["kv_heads"]) * self.hd * c["hidden"] + c["hidden"] * c["heads"] * self.hd
                     + 3 * c["ffn"] * c["hidden"] + 2 * c["hidden"])
        return c["layers"] * per_layer + 2 * c["vocab"] * c["hidden"] + c["hidden"]

    def rope(self, x, pos0: int):
        T = x.shape[-2]
        cos, sin = self.cos[pos0:pos0 + T], self.sin[pos0:pos0 + T]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return self.t.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def forward(self, tokens, pos0: int):
        """tokens [B, T] at positions pos0..pos0+T-1 -> next token ids [B, 1] (greedy). T > 1 is a prefill
        from position 0, T == 1 a decode step."""
        F = self.t.nn.functional
        c = self.cfg
        B, T = tokens.shape
        H, KV, hd, D = c["heads"], c["kv_heads"], self.hd, c["hidden"]
        x = F.embedding(tokens, self.embed)
        # Decode attends over the whole preallocated cache with a mask of the filled positions, so that every
        # step has the same shapes, as in a serving engine. (A key length that grows by one each step makes
        # torch 2.11's cuDNN attention build a new graph per call: ~50 ms of host time each on an H200.)
        mask = None if T > 1 else (self.positions <= pos0).view(1, 1, 1, -1)
        for L in self.layers:
            h = F.rms_norm(x, (D,), L["norm1"], eps=1e-5)
            q, k, v = F.linear(h, L["wqkv"]).split([H * hd, KV * hd, KV * hd], dim=-1)
            q = self.rope(q.view(B, T, H, hd).transpose(1, 2), pos0)
            k = self.rope(k.view(B, T, KV, hd).transpose(1, 2), pos0)
            L["k_cache"][:, :, pos0:pos0 + T] = k
            L["v_cache"][:, :, pos0:pos0 + T] = v.view(B, T, KV, hd).transpose(1, 2)
            if mask is None:  # prefill from position 0: causal attention over the prompt
                keys, values = L["k_cache"][:, :, :pos0 + T], L["v_cache"][:, :, :pos0 + T]
                a = F.scaled_dot_product_attention(q, keys, values, is_causal=True, enable_gqa=True)
            else:
                a = F.scaled_dot_product_attention(q, L["k_cache"], L["v_cache"], attn_mask=mask, enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(B, T, H * hd), L["wo"])
            h = F.rms_norm(x, (D,), L["norm2"], eps=1e-5)
            gate, up = F.linear(h, L["w_gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, L["w_down"])
        x = F.rms_norm(x[:, -1:], (D,), self.norm, eps=1e-5)
        return F.linear(x, self.lm_head).argmax(dim=-1)


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("timewarp demo: PyTorch is not installed (pip install torch)", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("timewarp demo: no CUDA device. Run it under emulation: `timewarp demo` "
              "(or `timewarp run python -m timewarp.integrations.demo`).", file=sys.stderr)
        return 1
    cfg = dict(PRESETS[args.preset])
    if args.layers is not None:
        cfg["layers"] = args.layers
    B, P, N = args.batch, args.prompt, args.new_tokens
    emulated = os.environ.get("TIMEWARP_GPU")
    props = torch.cuda.get_device_properties(0)
    how = f"emulated by timewarp ({emulated}): every time below is predicted" if emulated else "real GPU"
    print(f"timewarp demo on {props.name}, {props.multi_processor_count} SMs, "
          f"{props.total_memory / 2**30:.1f} GiB [{how}]")

    torch.manual_seed(0)
    model = LlamaShaped(torch, cfg, max_len=P + N + 1, batch=B)
    print(f"model: {args.preset} shape, {cfg['layers']} layers, {model.n_params() / 1e9:.2f} B parameters, bf16; "
          f"batch {B}, prompt {P} tokens, {N} new tokens")
    prompt = torch.randint(0, cfg["vocab"], (B, P), device="cuda")

    with torch.inference_mode():
        # warm-up on the measured shapes: library handles, workspaces, attention plans, first launches
        model.forward(model.forward(prompt, 0), P)
        torch.cuda.synchronize()

        start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        t0 = time.perf_counter()
        start.record()
        token = model.forward(prompt, 0)
        mid.record()
        mid.synchronize()
        t1 = time.perf_counter()
        generated = [token]
        for i in range(N - 1):
            token = model.forward(token, P + i)
            generated.append(token)
        end.record()
        out = torch.cat(generated, dim=1).cpu()  # the host reads the tokens, as generate() would
        t2 = time.perf_counter()
        assert out.shape == (B, N)

    prefill_ev = start.elapsed_time(mid) / 1e3
    decode_ev = mid.elapsed_time(end) / 1e3
    prefill_pc, decode_pc = t1 - t0, t2 - t1
    steps = max(N - 1, 1)
    print(f"prefill ({B} x {P} tokens):  {fmt_ms(prefill_ev)} (CUDA events)  {fmt_ms(prefill_pc)} (perf_counter)")
    print(f"decode  ({steps} steps):       {fmt_ms(decode_ev / steps)}/token (CUDA events)  "
          f"{fmt_ms(decode_pc / steps)}/token (perf_counter)")
    tok_s = B * steps / decode_pc if decode_pc > 0 else float("inf")
    print(f"throughput: {tok_s:.1f} tokens/s decode ({B} sequences), "
          f"{B * P / prefill_pc if prefill_pc > 0 else float('inf'):.0f} tokens/s prefill; "
          f"time to first token {fmt_ms(prefill_pc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
