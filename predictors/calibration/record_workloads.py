"""Workloads for the kernel recorder (integrations/record.py): the kernel families the emulator cannot annotate
(elementwise, norms, softmax, reductions, embedding, rotary, cat/index, copies), a small transformers Llama,
Inductor/Triton kernels and a CUDA graph replay, each case run a few times after warm-up.

On the GPU machine, from the repo root:
    python3 -m integrations.record --out OUT -- predictors/calibration/record_workloads.py [--budget S]
On a CPU (checks the logic; tiny sizes, no copies or graphs):
    python3 predictors/calibration/record_workloads.py --dry-run

The script itself measures nothing: the recorder reads every kernel from the profiler. Each call of a case
runs inside torch.profiler.record_function(LABEL), and the recorder gives every row the innermost such label:

    wl|sec=<section>|op=<op>|dtype=<bf16|fp32|...>|shape=<AxBxC>|cold=<0|1>|phase=<warmup|measure|setup>|rep=<i>

(some sections add keys, e.g. tokens=, step=). Split on '|' and '=' to get the fields. `shape` is the main
input's shape; `numel` its element count.

Sizes: element counts on a log grid 2^8 .. 2^26 (every power of two), bf16 and fp32. Row-wise ops (norms,
softmax, row reductions) take the same buffers viewed as [numel/row, row] for rows 128 .. 16384 (and the
Llama-3 vocabulary, 128256, for a few row counts). Each case runs WARM times (phase=warmup) and then REPS
times (phase=measure).

Cold L2: where one call touches at least COLD_MIN_BYTES, its inputs rotate over n views of one large random
pool (n = ceil(256 MiB / bytes per call), at most 64; the rotation continues across ops on the same size), so
that every call reads from HBM, as in a model whose layers each have their own tensors (cold=1). Smaller
calls reuse one buffer and run from the L2 (cold=0), as activations that the previous kernel just wrote do.
Nothing here changes GPU clocks or settings.
"""
import argparse
import math
import sys
import time
import traceback

T0 = time.perf_counter()
WARM, REPS = 2, 6
COLD_MIN_BYTES = 1 << 20
ROT_BYTES = 256 << 20
MAX_ROT = 64


def log(msg):
    print(f"[wl {time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def lab(**kv):
    return "wl|" + "|".join(f"{k}={v}" for k, v in kv.items())


def shp(t_or_shape):
    s = t_or_shape.shape if hasattr(t_or_shape, "shape") else t_or_shape
    return "x".join(str(int(d)) for d in s) or "scalar"


class Ctx:
    def __init__(self, args):
        import torch
        self.torch = torch
        self.dry = args.dry_run
        self.cuda = torch.cuda.is_available() and not self.dry
        self.dev = torch.device("cuda" if self.cuda else "cpu")
        self.deadline = T0 + args.budget
        self.rf = torch.profiler.record_function
        self.dtypes = {"bf16": torch.bfloat16, "fp32": torch.float32}
        self.pool_bytes = (768 << 20) if not self.dry else (8 << 20)
        self.pools = {}
        self.rot = {}
        self.cases = 0
        self.calls = 0

    def left(self):
        return self.deadline - time.perf_counter()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def pool(self, dname):
        """One random pool per dtype; X views come from its first half, Y views from its second."""
        if dname not in self.pools:
            dt = self.dtypes[dname]
            n = self.pool_bytes // self.torch.tensor([], dtype=dt).element_size()
            with self.rf(lab(sec="setup", op="pool", dtype=dname, shape=n, phase="setup")):
                self.pools[dname] = self.torch.randn(n, device=self.dev, dtype=dt)
        return self.pools[dname]

    def views(self, dname, n, bytes_per_call):
        """(X, Y, nb): functions j -> a flat view of n elements (X and Y never overlap), rotating over nb."""
        p = self.pool(dname)
        half = p.numel() // 2
        cold = bytes_per_call >= COLD_MIN_BYTES
        nb = 1
        if cold:
            nb = max(1, min(MAX_ROT, math.ceil(ROT_BYTES / bytes_per_call), half // n))
        if n > half:
            raise ValueError(f"{n} elements do not fit the pool")

        def X(j):
            k = j % nb
            return p[k * n:(k + 1) * n]

        def Y(j):
            k = j % nb
            return p[half + k * n:half + (k + 1) * n]
        return X, Y, nb, int(cold)

    def run(self, meta, fn, nb=1, warm=WARM, reps=REPS):
        """fn(j) launches the case on rotation slot j; labels each call; rotation continues per (dtype, n, nb)."""
        key = (meta.get("dtype"), meta.get("shape"), nb)
        j = self.rot.get(key, 0)
        for i in range(warm + reps):
            phase = "warmup" if i < warm else "measure"
            with self.rf(lab(**meta, phase=phase, rep=i if i < warm else i - warm)):
                fn(j)
            j += 1
            self.calls += 1
        self.rot[key] = j
        self.cases += 1
        self.sync()


def exps(ctx):
    return list(range(8, 13)) if ctx.dry else list(range(8, 27))


# ------------------------------------------------------------------------------------------------ sections

def sec_elementwise(ctx):
    torch = ctx.torch
    import torch.nn.functional as F
    for dname, dt in ctx.dtypes.items():
        other = torch.float32 if dt == torch.bfloat16 else torch.bfloat16
        es = torch.tensor([], dtype=dt).element_size()
        for e in exps(ctx):
            n = 1 << e
            cases = {
                "add": (lambda X, Y: (lambda j: X(j) + Y(j)), 3 * n * es),
                "mul": (lambda X, Y: (lambda j: X(j) * Y(j)), 3 * n * es),
                "add_scalar": (lambda X, Y: (lambda j: X(j) + 1.0), 2 * n * es),
                "silu": (lambda X, Y: (lambda j: F.silu(X(j))), 2 * n * es),
                "gelu": (lambda X, Y: (lambda j: F.gelu(X(j))), 2 * n * es),
                "copy": (lambda X, Y: (lambda j: Y(j).copy_(X(j))), 2 * n * es),
                "cast": (lambda X, Y: (lambda j: X(j).to(other)), n * es + n * (6 - es)),
                "fill": (lambda X, Y: (lambda j: Y(j).fill_(1.0)), n * es),
            }
            for op, (mk, nbytes) in cases.items():
                X, Y, nb, cold = ctx.views(dname, n, nbytes)
                meta = dict(sec="elementwise", op=op, dtype=dname, shape=n, numel=n, cold=cold)
                if op == "cast":
                    meta["out_dtype"] = "fp32" if other == torch.float32 else "bf16"
                ctx.run(meta, mk(X, Y), nb)
        if ctx.left() < 30:
            log("elementwise: budget, stopping")
            return


def row_lens(ctx):
    return [128, 512] if ctx.dry else [128, 512, 2048, 4096, 8192, 16384]


def sec_rowwise(ctx):
    torch = ctx.torch
    import torch.nn.functional as F
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    eps = 1e-5
    vocab = 1000 if ctx.dry else 128256
    for dname, dt in ctx.dtypes.items():
        es = torch.tensor([], dtype=dt).element_size()
        shapes = [((1 << e) // L, L) for L in row_lens(ctx) for e in exps(ctx) if (1 << e) >= L]
        shapes += [(r, vocab) for r in ((1, 8) if ctx.dry else (1, 4, 16, 64))]
        for (R, L) in shapes:
            n = R * L
            w = torch.randn(L, device=ctx.dev, dtype=dt)
            hf = LlamaRMSNorm(L, eps=eps).to(device=ctx.dev, dtype=dt)
            ops = {
                "rms_norm": (lambda X: (lambda j: F.rms_norm(X(j).view(R, L), (L,), w, eps)), 2 * n * es),
                "llama_rmsnorm": (lambda X: (lambda j: hf(X(j).view(R, L))), 2 * n * es),
                "softmax": (lambda X: (lambda j: torch.softmax(X(j).view(R, L), dim=-1)), 2 * n * es),
                "sum_row": (lambda X: (lambda j: X(j).view(R, L).sum(-1)), n * es),
                "argmax_row": (lambda X: (lambda j: X(j).view(R, L).argmax(-1)), n * es),
                "max_row": (lambda X: (lambda j: X(j).view(R, L).max(-1)), n * es),
            }
            if L == vocab:  # logits: what greedy and top-k/top-p sampling do
                ops = {k: v for k, v in ops.items() if k in ("softmax", "argmax_row", "max_row")}
                ops.update({
                    "topk50": (lambda X: (lambda j: torch.topk(X(j).view(R, L), 50, dim=-1)), n * es),
                    "sort_desc": (lambda X: (lambda j: torch.sort(X(j).view(R, L), dim=-1, descending=True)),
                                  2 * n * es),
                    "cumsum_row": (lambda X: (lambda j: torch.cumsum(X(j).view(R, L), dim=-1)), 2 * n * es),
                    "multinomial": (lambda X: (lambda j: torch.multinomial(
                        torch.softmax(X(j).view(R, L).float(), dim=-1), 1)), n * es),
                })
            for op, (mk, nbytes) in ops.items():
                X, _, nb, cold = ctx.views(dname, n, nbytes)
                ctx.run(dict(sec="rowwise", op=op, dtype=dname, shape=f"{R}x{L}", numel=n, row=L, cold=cold),
                        mk(X), nb)
            if ctx.left() < 30:
                log("rowwise: budget, stopping")
                return


def sec_reduce(ctx):
    torch = ctx.torch
    for dname, dt in ctx.dtypes.items():
        es = torch.tensor([], dtype=dt).element_size()
        for e in exps(ctx):
            n = 1 << e
            X, _, nb, cold = ctx.views(dname, n, n * es)
            for op, fn in (("sum", lambda j: X(j).sum()), ("max", lambda j: X(j).max()),
                           ("argmax", lambda j: X(j).argmax()), ("mean", lambda j: X(j).mean())):
                ctx.run(dict(sec="reduce", op=op, dtype=dname, shape=n, numel=n, cold=cold), fn, nb)


def sec_embedding(ctx):
    torch = ctx.torch
    import torch.nn.functional as F
    V, H = (1000, 64) if ctx.dry else (128256, 4096)
    toks = [1, 8, 64] if ctx.dry else [1, 2, 8, 32, 128, 512, 2048, 8192, 16384]
    for dname, dt in ctx.dtypes.items():
        with ctx.rf(lab(sec="setup", op="embedding_weight", dtype=dname, shape=f"{V}x{H}", phase="setup")):
            W = torch.randn(V, H, device=ctx.dev, dtype=dt)
        for t in toks:
            ids = [torch.randint(0, V, (1, t), device=ctx.dev) for _ in range(4)]
            ctx.run(dict(sec="embedding", op="embedding", dtype=dname, shape=f"1x{t}", weight=f"{V}x{H}", cold=1),
                    lambda j: F.embedding(ids[j % 4], W))
        del W
        if ctx.cuda:
            torch.cuda.empty_cache()


def sec_rotary(ctx):
    """transformers' Llama rotary embedding: LlamaRotaryEmbedding (cos/sin from position ids) and
    apply_rotary_pos_emb on q/k laid out as the attention module makes them (a transpose of [b, s, h, d])."""
    torch = ctx.torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    Hq, Hkv, D = (8, 2, 32) if ctx.dry else (32, 8, 128)
    cfg = LlamaConfig(hidden_size=Hq * D, num_attention_heads=Hq, num_key_value_heads=Hkv, rope_theta=500000.0,
                      max_position_embeddings=8192)
    rope = LlamaRotaryEmbedding(config=cfg).to(ctx.dev)  # (the device argument left transformers 5.x)
    cases = [(1, 1), (8, 16)] if ctx.dry else [(1, 1), (8, 1), (64, 1), (1, 16), (1, 128), (1, 512), (1, 2048),
                                               (1, 8192), (8, 512)]
    dt = torch.bfloat16
    for b, s in cases:
        nb = max(1, min(8, math.ceil(ROT_BYTES / (b * s * (Hq + Hkv) * D * 2 * 2)))) if b * s >= 512 else 1
        qs = [torch.randn(b, s, Hq, D, device=ctx.dev, dtype=dt).transpose(1, 2) for _ in range(nb)]
        ks = [torch.randn(b, s, Hkv, D, device=ctx.dev, dtype=dt).transpose(1, 2) for _ in range(nb)]
        pos = torch.arange(1000, 1000 + s, device=ctx.dev)[None].expand(b, -1)
        with ctx.rf(lab(sec="rotary", op="rope_cos_sin", dtype="bf16", shape=f"{b}x{s}", phase="setup")):
            cos, sin = rope(qs[0], pos)
        cold = int(nb > 1)
        ctx.run(dict(sec="rotary", op="rope_cos_sin", dtype="bf16", shape=f"{b}x{s}", cold=0),
                lambda j: rope(qs[j % nb], pos))
        ctx.run(dict(sec="rotary", op="apply_rotary_pos_emb", dtype="bf16", shape=f"{b}x{Hq}x{s}x{D}",
                     kv_shape=f"{b}x{Hkv}x{s}x{D}", cold=cold),
                lambda j: apply_rotary_pos_emb(qs[j % nb], ks[j % nb], cos, sin), nb)
        del qs, ks


def sec_index_cat(ctx):
    torch = ctx.torch
    es_of = {"bf16": 2, "fp32": 4}
    for dname, dt in ctx.dtypes.items():
        es = es_of[dname]
        for e in exps(ctx)[::2]:
            n = 1 << e
            C = min(n // 2, 4096)
            R = n // C
            X, Y, nb, cold = ctx.views(dname, n, 3 * n * es)
            g = torch.Generator(device=ctx.dev)
            g.manual_seed(e)
            rows_idx = torch.randint(0, R, (max(1, R // 2),), device=ctx.dev, generator=g)
            col_idx = torch.randint(0, C, (R, max(1, C // 2)), device=ctx.dev, generator=g)
            mask = torch.rand(R, C, device=ctx.dev, generator=g) > 0.5
            src = torch.randn(rows_idx.numel(), C, device=ctx.dev, dtype=dt)

            def x2(j):
                return X(j).view(R, C)

            def y2(j):
                return Y(j).view(R, C)
            ops = {
                "cat_lastdim": lambda j: torch.cat([X(j).view(R, C)[:, :C // 2], Y(j).view(R, C)[:, :C // 2]], -1),
                "cat_dim0": lambda j: torch.cat([X(j)[:n // 2].view(-1, C), Y(j)[:n // 2].view(-1, C)], 0),
                "index_select": lambda j: x2(j).index_select(0, rows_idx),
                "index_tensor": lambda j: x2(j)[rows_idx],
                "index_put": lambda j: y2(j).index_put_((rows_idx,), src),
                "gather_lastdim": lambda j: torch.gather(x2(j), -1, col_idx),
                "masked_fill": lambda j: x2(j).masked_fill(mask, 0.0),
                "where": lambda j: torch.where(mask, x2(j), y2(j)),
                "slice_contiguous": lambda j: x2(j)[:, :C // 2].contiguous(),
                "transpose_contiguous": lambda j: x2(j).t().contiguous(),
                "triu": lambda j: torch.triu(x2(j)),
            }
            for op, fn in ops.items():
                ctx.run(dict(sec="index_cat", op=op, dtype=dname, shape=f"{R}x{C}", numel=n, cold=cold), fn, nb)
    # DynamicCache-style KV append: cat([past, new], dim=-2) on [1, 8, L, 128] bf16
    Hkv, D = (2, 32) if ctx.dry else (8, 128)
    for L in ([16, 64] if ctx.dry else [16, 128, 512, 2048, 8192]):
        past = torch.randn(1, Hkv, L, D, device=ctx.dev, dtype=torch.bfloat16)
        new = torch.randn(1, Hkv, 1, D, device=ctx.dev, dtype=torch.bfloat16)
        ctx.run(dict(sec="index_cat", op="kv_cat", dtype="bf16", shape=f"1x{Hkv}x{L}x{D}", cold=0),
                lambda j: torch.cat([past, new], dim=-2))


def sec_memcpy(ctx):
    if not ctx.cuda:
        log("memcpy: no GPU, skipped")
        return
    torch = ctx.torch
    for e in (10, 14, 18, 22, 26):
        nbytes = 1 << e
        n = nbytes // 4
        d = torch.randn(n, device=ctx.dev)
        d2 = torch.empty_like(d)
        hp = torch.randn(n)
        hpin = torch.randn(n).pin_memory()
        cases = {
            "h2d_pageable": lambda j: d2.copy_(hp),
            "h2d_pinned": lambda j: d2.copy_(hpin, non_blocking=True),
            "d2h_pageable": lambda j: hp.copy_(d),
            "d2h_pinned": lambda j: hpin.copy_(d, non_blocking=True),
            "d2d": lambda j: d2.copy_(d),
        }
        for op, fn in cases.items():
            ctx.run(dict(sec="memcpy", op=op, dtype="fp32", shape=n, bytes=nbytes, cold=0), fn, warm=1, reps=3)
    x = torch.ones(1, device=ctx.dev)
    ctx.run(dict(sec="memcpy", op="item", dtype="fp32", shape=1, bytes=4, cold=0), lambda j: x.item(), warm=1,
            reps=3)


def sec_fills(ctx):
    """zero_ and fill_ on every common dtype, 1 KiB to 1 GiB written (numel = bytes / element size): PyTorch's
    FillFunctor kernels, one per dtype, whose grids are sized by bytes."""
    torch = ctx.torch
    dtypes = {"u8": torch.uint8, "bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
              "i64": torch.int64, "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
              "fp64": torch.float64}
    top = 16 if ctx.dry else 30
    buf = torch.empty(1 << top, dtype=torch.uint8, device=ctx.dev)
    for dname, dt in dtypes.items():
        es = torch.tensor([], dtype=dt).element_size()
        for e in range(10, top + 1):
            n = (1 << e) // es
            x = buf[: n * es].view(dt)
            for op, fn in (("zero", lambda j: x.zero_()), ("fill", lambda j: x.fill_(1))):
                ctx.run(dict(sec="fills", op=op, dtype=dname, shape=n, numel=n, bytes=n * es, cold=int(n * es >= COLD_MIN_BYTES)),
                        fn, warm=1, reps=3)
        if ctx.left() < 30:
            log("fills: budget, stopping")
            return


def sec_d2d(ctx):
    """Device-to-device copies of 1 KiB to 1 GiB (powers of two and 1.5x between), issued eagerly and as the
    one node of a CUDA graph replayed: the two take different paths on the H200 above 256 MiB."""
    if not ctx.cuda:
        log("d2d: no GPU, skipped")
        return
    torch = ctx.torch
    a = torch.ones(1 << 30, dtype=torch.uint8, device=ctx.dev)
    b = torch.empty_like(a)
    sizes = sorted({1 << e for e in range(10, 31)} | {3 << (e - 1) for e in range(11, 30)})
    for nbytes in sizes:
        src, dst = a[:nbytes], b[:nbytes]
        meta = dict(sec="d2d", dtype="u8", shape=nbytes, numel=nbytes, bytes=nbytes, cold=int(nbytes >= COLD_MIN_BYTES))
        ctx.run(dict(meta, op="eager"), lambda j: dst.copy_(src), warm=1, reps=3)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s):
            with torch.cuda.graph(g):
                dst.copy_(src)
        torch.cuda.current_stream().wait_stream(s)
        ctx.run(dict(meta, op="graph"), lambda j: g.replay(), warm=1, reps=3)
        del g
        if ctx.left() < 15:
            log("d2d: budget, stopping")
            return


def sec_cuda_graph(ctx):
    if not ctx.cuda:
        log("cuda_graph: no GPU, skipped")
        return
    torch = ctx.torch
    import torch.nn.functional as F
    dt = torch.bfloat16
    T, H = 16, 4096
    x = torch.randn(T, H, device=ctx.dev, dtype=dt)
    W = torch.randn(H, H, device=ctx.dev, dtype=dt)
    w = torch.randn(H, device=ctx.dev, dtype=dt)
    out = torch.empty_like(x)
    tiny = torch.zeros(1, device=ctx.dev)

    def block():
        h = F.rms_norm(x, (H,), w, 1e-5)
        y = F.linear(h, W)
        z = F.silu(y) * y
        out.copy_(z + x)

    def tiny100():
        for _ in range(100):
            tiny.add_(1)

    for op, body in (("block_rmsnorm_linear_silu_mul_add", block), ("add_inplace_x100", tiny100)):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with ctx.rf(lab(sec="cuda_graph", op=op, dtype="bf16", shape=f"{T}x{H}", phase="setup")):
                for _ in range(2):
                    body()
        torch.cuda.current_stream().wait_stream(s)
        ctx.sync()
        g = torch.cuda.CUDAGraph()
        with ctx.rf(lab(sec="cuda_graph", op=op, dtype="bf16", shape=f"{T}x{H}", phase="capture")):
            with torch.cuda.graph(g):
                body()
        ctx.run(dict(sec="cuda_graph", op=op, dtype="bf16", shape=f"{T}x{H}", cold=0), lambda j: g.replay(),
                warm=1, reps=4)
        # the same body eagerly, for comparison with the replay
        ctx.run(dict(sec="cuda_graph", op=op + "_eager", dtype="bf16", shape=f"{T}x{H}", cold=0),
                lambda j: body(), warm=1, reps=2)
        del g


def sec_compile(ctx):
    torch = ctx.torch
    import torch.nn.functional as F

    def rms_swiglu(x, w, gate, up):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        h = h.to(x.dtype) * w
        return h, F.silu(gate) * up

    f = torch.compile(rms_swiglu, dynamic=False)
    dt = torch.bfloat16
    H, I = (64, 128) if ctx.dry else (4096, 14336)
    for T in ([4] if ctx.dry else [1, 512, 4096]):
        if ctx.left() < 40:
            log("compile: budget, stopping")
            return
        x = torch.randn(T, H, device=ctx.dev, dtype=dt)
        w = torch.randn(H, device=ctx.dev, dtype=dt)
        gate = torch.randn(T, I, device=ctx.dev, dtype=dt)
        up = torch.randn(T, I, device=ctx.dev, dtype=dt)
        t = time.perf_counter()
        with ctx.rf(lab(sec="compile", op="rms_swiglu", dtype="bf16", shape=f"{T}x{H}", phase="setup")):
            f(x, w, gate, up)
        ctx.sync()
        log(f"compile: T={T} compiled in {time.perf_counter() - t:.1f}s")
        ctx.run(dict(sec="compile", op="rms_swiglu", dtype="bf16", shape=f"{T}x{H}", ffn_shape=f"{T}x{I}", cold=0),
                lambda j: f(x, w, gate, up))


def sec_llama(ctx):
    torch = ctx.torch
    from transformers import LlamaConfig, LlamaForCausalLM
    if ctx.dry:
        cfg = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                          num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048)
        S, NEW = 32, 4
    else:
        cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2,
                          num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                          rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                          bos_token_id=128000, eos_token_id=None)
        S, NEW = 512, 16
    t = time.perf_counter()
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with ctx.rf(lab(sec="llama", op="build", dtype="bf16", shape=f"L{cfg.num_hidden_layers}", phase="setup")):
            with ctx.dev:
                model = LlamaForCausalLM(cfg)
            model = model.to(device=ctx.dev, dtype=torch.bfloat16).eval()
    finally:
        torch.set_default_dtype(prev)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    ctx.sync()
    log(f"llama: built in {time.perf_counter() - t:.1f}s, attn={getattr(model.config, '_attn_implementation', None)}")
    ids = torch.randint(0, cfg.vocab_size, (1, S), device=ctx.dev)
    with torch.inference_mode():
        ctx.run(dict(sec="llama", op="prefill", dtype="bf16", shape=f"1x{S}", layers=cfg.num_hidden_layers, cold=0),
                lambda j: model(input_ids=ids, use_cache=False), warm=1, reps=2)
        ctx.run(dict(sec="llama", op="generate", dtype="bf16", shape=f"1x{S}", new_tokens=NEW,
                     layers=cfg.num_hidden_layers, cold=0),
                lambda j: model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                                         min_new_tokens=NEW, do_sample=False),
                warm=1, reps=1)
    del model
    if ctx.cuda:
        torch.cuda.empty_cache()


def sec_sdpa_backends(ctx):
    """Attention through the backends a program can force or that an explicit mask selects (the default
    path, cuDNN, is annotated by the emulator and measured by the microbenchmarks instead)."""
    torch = ctx.torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dt = torch.bfloat16
    H, HK, D = (4, 2, 16) if ctx.dry else (32, 8, 128)
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    for B in ([1] if ctx.dry else [1, 4, 16]):
        for S in ([16] if ctx.dry else [128, 256, 512, 1024, 2048, 4096]):
            if ctx.left() < 15:
                log("sdpa_backends: budget, stopping")
                return
            q = torch.randn(B, H, S, D, device=ctx.dev, dtype=dt)
            kv = torch.randn(B, HK, S, D, device=ctx.dev, dtype=dt)
            kvr = kv.repeat_interleave(H // HK, dim=1)
            mask = torch.ones(S, S, device=ctx.dev, dtype=torch.bool).tril()
            for name, be in backends.items():
                for causal in (True, False):
                    for gqa in ("enable_gqa", "repeat_kv"):
                        k = kv if gqa == "enable_gqa" else kvr
                        meta = dict(sec="sdpa_backends", op=f"sdpa_{name}", dtype="bf16", shape=f"{B}x{H}x{S}x{D}",
                                    numel=B * H * S * D, causal=int(causal), gqa=gqa, cold=0)
                        try:
                            with sdpa_kernel(be):
                                ctx.run(meta, lambda j: F.scaled_dot_product_attention(
                                    q, k, k, is_causal=causal, enable_gqa=gqa == "enable_gqa"))
                        except RuntimeError:
                            pass  # a backend that refuses this case (the efficient one and GQA)
            meta = dict(sec="sdpa_backends", op="sdpa_mask", dtype="bf16", shape=f"{B}x{H}x{S}x{D}",
                        numel=B * H * S * D, causal=1, gqa="enable_gqa", cold=0)
            ctx.run(meta, lambda j: F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask, enable_gqa=True))


def sec_compile_sizes(ctx):
    """Inductor's Triton kernels (pointwise, reductions) over a range of token counts, one dynamic-shape
    compilation each, so that the same kernels are measured at many launch sizes."""
    torch = ctx.torch
    import torch.nn.functional as F

    def swiglu(gate, up):
        return F.silu(gate) * up

    def rms(x, w):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def softmax_scale(x):
        return torch.softmax(x.float() * 0.125, dim=-1).to(x.dtype)

    dt = torch.bfloat16
    H, I = (64, 128) if ctx.dry else (4096, 14336)
    fns = {"swiglu": torch.compile(swiglu, dynamic=True), "rms": torch.compile(rms, dynamic=True),
           "softmax": torch.compile(softmax_scale, dynamic=True)}
    for T in ([2, 4] if ctx.dry else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]):
        if ctx.left() < 15:
            log("compile_sizes: budget, stopping")
            return
        gate = torch.randn(T, I, device=ctx.dev, dtype=dt)
        up = torch.randn(T, I, device=ctx.dev, dtype=dt)
        x = torch.randn(T, H, device=ctx.dev, dtype=dt)
        w = torch.randn(H, device=ctx.dev, dtype=dt)
        logits = torch.randn(T, 1024 if not ctx.dry else 32, device=ctx.dev, dtype=dt)
        cases = {"swiglu": (lambda j: fns["swiglu"](gate, up), T * I),
                 "rms": (lambda j: fns["rms"](x, w), T * H),
                 "softmax": (lambda j: fns["softmax"](logits), logits.numel())}
        for op, (fn, numel) in cases.items():
            fn(0)  # compile (or reuse) outside the measured calls
            ctx.sync()
            ctx.run(dict(sec="compile_sizes", op=op, dtype="bf16", shape=f"{T}", numel=numel, cold=0), fn)


SECTIONS = {"elementwise": sec_elementwise, "rowwise": sec_rowwise, "reduce": sec_reduce,
            "embedding": sec_embedding, "rotary": sec_rotary, "index_cat": sec_index_cat, "memcpy": sec_memcpy,
            "llama": sec_llama, "compile": sec_compile, "cuda_graph": sec_cuda_graph,
            "sdpa_backends": sec_sdpa_backends, "compile_sizes": sec_compile_sizes, "fills": sec_fills,
            "d2d": sec_d2d}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds; later sections are skipped past it")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of " + ",".join(SECTIONS))
    args = ap.parse_args(argv)
    ctx = Ctx(args)
    log(f"device {ctx.dev}, torch {ctx.torch.__version__}, sections {args.sections}")
    failed = []
    min_left = {"llama": 30, "compile": 45}
    for name in args.sections.split(","):
        if ctx.left() < min_left.get(name, 10):
            log(f"SKIP {name}: {ctx.left():.0f}s left")
            failed.append(f"{name}: skipped (budget)")
            continue
        t = time.perf_counter()
        c0, k0 = ctx.cases, ctx.calls
        try:
            SECTIONS[name](ctx)
        except Exception as e:  # noqa: BLE001  one section's failure must not cost the others' data
            log(f"FAIL {name}: {type(e).__name__}: {e}\n{traceback.format_exc()}")
            failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
            try:
                ctx.sync()
            except Exception:  # noqa: BLE001
                pass
        log(f"{name}: {ctx.cases - c0} cases, {ctx.calls - k0} calls, {time.perf_counter() - t:.1f}s")
    log(f"done: {ctx.cases} cases, {ctx.calls} calls; failures: {failed or 'none'}")
    return 1 if any("skipped" not in f for f in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
