"""Build the measured-profile table the C core predicts from (shim_c/core/profile.c), from the H200
microbenchmarks, keyed exactly as the emulator's launch annotations:

    gpu   <catalog key of the GPU measured>
    gemm  <a_type> <trans_a> <trans_b> <M> <K> <N> <batch> <ns> [1] cuBLAS's view: C[M,N] = op(A)[M,K] op(B)[K,N];
                                                                    a_type 77: fp32 computed as TF32;
                                                                    1: measured capped (power.c; none written)
    attn  <causal> <heads> <kv_heads> <head_dim> <batch> <q_len> <kv_len> <ns>
    copy  <dir> <pinned> <bytes> <ns>                               eager copies; dir: 1 HtoD, 2 DtoH, 3 DtoD
    gcopy <dir> <pinned> <bytes> <ns>                               copies as nodes of a CUDA graph
    set   <bytes> <ns>                                              device memsets (cudaMemsetAsync)
    host  <launch_ns|graph_launch_ns|gemm_ns|attention_ns|sync_ns|module_load_ns|module_load_ns_per_mb|
           graph_upload_ns|graph_upload_ns_per_node|blas_kernel_load_ns> <ns>
          host costs of the real stack per call (per module loaded, per MB of its fatbinary; per graph upload,
          per node; per cuBLAS kernel loaded)
    kgap  <ns>                                                      time between back-to-back kernels
    attnmodel <t0_ns> <flop_s> <byte_s>                             attention's latency-plus-roofline model
    kern  <grid x y z> <block x y z> <ns> <demangled kernel name>   kernels without an annotation
    krow  <outputs> <inputs> <ns> <demangled kernel name>           PyTorch's reductions and norms by row shape
    attnstep <t0_ns> <eff_compute> <eff_memory> <per_tile_ns> <per_decode_tile_ns>   vLLM's FA3 main kernel per step (step.c)
    moemodel <t0_ns> <eff_memory> <eff_compute>                     vLLM's fused MoE kernel (moe.c, fit_moe.py)
    gemmalign <t0_ns> <eff_memory> <eff_compute>                    floor of cuBLAS GEMMs with rows off 16 bytes
                                                                    (profile.c, fit_gemm_align.py)
    inductormodel <t0_ns> <eff_memory> <eff_compute>                Inductor kernels without rows, by extent and
                                                                    tensor arguments (profile.c, fit_inductor.py)
    blaskern <M> <K> <N first> <N last> <kernel id> <2nd kernel id or 0> <memset>
          which cuBLAS kernel a bf16 F.linear shape runs over a range of token counts (blas_lazy.c)

Device times come from CUDA-graph replays (`mode == graph`: no launch gaps). Copies and memsets come from
DENSE_SRC where present: gcopy rows are per-node times inside graphs (D2D, pinned H2D/D2H), copy rows eager
device times (pageable copies, which cannot be captured; D2D from EAGER_DEVICE_BOUND up; the vLLM
recording's small pinned copies), set rows per-node memset times; before it, host<->device copies came from
eager loops. PyTorch's F.linear(x[m,k], w[n,k]) is cuBLAS (trans_a=1, trans_b=0, M=n, N=m, K=k) and
x[m,k] @ b[k,n] is (0, 0, M=n, N=m, K=k), as the emulated cuBLAS records them (checked with `timewarp run
--trace`).

The split (fixed, so that held-out errors stay honest; `is_held_out` below is the single definition):
- GEMM: every (N) at an odd position of the measured list of token counts, and all of the shapes
  (M, K) = (10240, 8192) and (4096, 14336), are held out; of the other models' linear layers (MODELS_SRC),
  every shape of the models at odd positions of MODEL_ORDER (Qwen2.5-14B, Qwen2.5-72B, Gemma-2-9B,
  Llama-3.2-1B): a model the fit has not seen.
- attention: batch 4 (every length), and the odd positions of the measured lengths, are held out.
- copies and memsets (and the uint8 fills of DENSE_SRC): a size is held out when floor(log2(bytes)) is odd
  (the odd powers of two and the 1.5 x 2^k sizes above them: 2 and 3 KiB are held out, 1, 1.5, 4 and 6 KiB
  fitted). Pinned copies the vLLM recording has (device times of vLLM's small cudaMemcpyAsync, 4 B to
  32 KiB) are the eager rows over that range; the eager loops time the host's launch rate there, not the
  device.
- kernels without an annotation (kernels_2026-11-29, -29b and -30, recorded with integrations/record.py): workloads whose
  element count is an odd power of two (rounded) are held out; the Llama, torch.compile and CUDA-graph
  sections are whole-program checks and never fitted.
- kernels without an annotation recorded inside real vLLM 0.24.0 runs (vllm_kernels_2026-11-30, the Llama-3-8B
  shape; vllm_fp8_kernels_2026-12-04, the same with fp8 linears; vllm_moe_kernels_2026-12-04, a Qwen1.5-MoE
  shape: the recorder around predictors/calibration/vllm_workload.py; family `vkern`): per kernel name and
  block shape, the
  distinct launch sizes (number of blocks) are sorted and those at odd positions are held out, so that a
  held-out size is predicted by interpolation between its fitted neighbours. GEMM kernels (nvjet, cutlass or
  cuBLAS gemm/gemv, vLLM's fused_moe_kernel: timed by their GEMM annotation) and the attention kernels step.c
  times (FlashAttention's main forward kernels) get no rows. Keys the kernels_2026-11-29 recordings already have keep those rows.
- GEMMs measured inside the real vLLM run (family `vgemm`: vllm_kernels_2026-11-30/gemm_rows.csv, keyed by
  aligning the recording's steps with an emulated run of the same workload, predictors/vllm_gemm_rows.py; the
  time is the GEMM's slot in the graph: its kernels plus the gaps they add, at full clock: each occurrence over
  the power cap's factor on it, predictors/power_model.py). Per (M, K) family the token
  counts N are sorted; an N in GEMM_TOKENS is held out exactly when the microbenchmark split holds it out,
  any other N at odd positions, and each family's smallest and largest N are always fitted. Where a key
  exists in both sources the vLLM row replaces the microbenchmark's (the in-situ measurement).
- vLLM's FlashAttention-3 step model (`attnstep`, fitted by predictors/fit_attention.py on the main-kernel
  times inside the real vLLM run, each step's lengths rebuilt by replaying vLLM's scheduling of the recorded
  cases, with vllm_kernels_2026-11-30/attention.csv's microbenchmark rows at a lower weight, scaled by the
  measured in-situ slowdown): a case is held out when crc32 of its label (microbenchmark: case_id) is odd.
Two tables are written. profile_fit.tsv has only the rows not held out: `timewarp validate` runs with it and
reports both sets, so held-out errors stay honest (`python -m timewarp.predictors.fit_attention` and
`... .check_vllm_kernels` report the last two). profile.tsv, the one `timewarp run` uses, has every measured
row: the split measures the predictor, and a user's launch at a held-out shape (512 tokens, batch 4) should
get the measurement, not the interpolation that the split evaluates. The FA3 step model and the launch gap
are fitted on the fitted rows in both.

    python -m timewarp.predictors.profile_build [MICROBENCH_DIR]     # writes profile.tsv and profile_fit.tsv
"""
from __future__ import annotations

import gzip
import json
import math
import pathlib
import sys
import zlib

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_SRC = HERE / "data" / "h200" / "microbench_2026-11-29"
# the elementwise and memcpy sections again, with --graph-slope: per-node device time inside a graph (node_us,
# the slope between replays of inner and 4 x inner nodes), free of the ~12 us per-replay cost that
# t_median_us divides among `inner` nodes; used where present for the in-graph gap and the graph-timed copies
# Since 2026-12-04 the elementwise section timed with no torch.profiler session in the process (--no-profile):
# one leaves every later graph node 0.16-0.28 us slower (graph_nocupti_2026-12-04), and the 2026-12-01 run had
# profiled before timing (its small nodes 0.34 us above these)
SLOPE_SRC = HERE / "data" / "h200" / "graph_nocupti_2026-12-04"
# copies and memsets again (2026-12-02, --memcpy-grid dense --memcpy-passes 2): 2^k and 1.5 x 2^k from 1 KiB to
# 2 GiB, pinned H2D/D2H also inside graphs, the slope graph on the same buffers as the inner one; medians over
# the two passes. Where present, every copy, memset and uint8 fill row comes from here (_dense_table)
DENSE_SRC = HERE / "data" / "h200" / "memcpy_dense_2026-12-02"
# the GEMM and attention sections again (2026-12-03, --cool-ms 150): every timed repetition at the card's full
# clock, so that shim_c/core/power.c's stretch under sustained work is not counted twice (the rows of
# DEFAULT_SRC were timed back to back and carry 0-22% of the power cap's slowdown, median 3%)
GEMM_SRC = HERE / "data" / "h200" / "gemm_cool_2026-12-03"
SDPA_SRC = HERE / "data" / "h200" / "sdpa_cool_2026-12-03"    # the attention section likewise
# the linear layers of nine other open models (microbench_h200.py's gemm_models section, 2026-12-03, also
# --cool-ms 150): every model's rows are tagged with its name; the models at odd positions of MODEL_ORDER are
# held out whole, so that `timewarp validate` measures a model whose shapes the fit never saw
MODELS_SRC = HERE / "data" / "h200" / "gemm_models_2026-12-03"
MODEL_ORDER = ["qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "mistral-nemo-12b", "gemma-2-9b",
               "llama-3.2-3b", "llama-3.2-1b", "phi-3-mini"]
DEFAULT_OUT = HERE / "data" / "h200" / "profile.tsv"          # every measured row: what `timewarp run` uses
FIT_OUT = HERE / "data" / "h200" / "profile_fit.tsv"          # fitted rows only: what `timewarp validate` uses
KERNELS = [HERE / "data" / "h200" / d / "kernels.parquet"
           for d in ("kernels_2026-11-29", "kernels_2026-11-29b", "kernels_2026-11-30")]
VLLM_DIR = HERE / "data" / "h200" / "vllm_kernels_2026-11-30"
VLLM_KERNELS = [VLLM_DIR / "kernels.parquet"]
# recordings of other models and configurations whose kernels the Llama-3-8B one lacks (Inductor's fused fp8
# quantisation; the MoE layer's routing, align, sort, topk, sum and act-and-mul kernels; the fp8 KV cache's
# writes): kern rows for the keys it has not
VLLM_EXTRA_KERNELS = [HERE / "data" / "h200" / d / "kernels.parquet"
                      for d in ("vllm_fp8_kernels_2026-12-04", "vllm_moe_kernels_2026-12-04",
                                "vllm_kvfp8_kernels_2026-12-04")]
# kernels whose time comes from elsewhere: GEMMs (the cuBLAS annotation) and the attention kernels step.c
# classifies as step-timed (keep in sync with classify() there)
GEMM_KERNEL = r"^nvjet|gemm|gemv|xmma|tensorop|fused_moe_kernel"
STEP_KERNEL = r"FlashAttnFwdSm90|FlashAttnFwdSm80|^(?!.*pytorch_flash)(?!.*combine).*flash_fwd_(?:splitkv_)?kernel"
KERNEL_SECTIONS = {"elementwise", "rowwise", "reduce", "index_cat", "rotary", "embedding", "sdpa_backends",
                   "compile_sizes", "fills"}

# cudaDataType_t of A; 77 (CUBLAS_COMPUTE_32F_FAST_TF32) marks fp32 operands computed as TF32, which
# profile.c matches against fp32 launches whose compute type is TF32 (4x faster than plain fp32)
DTYPE = {"bf16": 14, "fp16": 2, "fp32": 0, "tf32": 77}
GEMM_TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
HELD_OUT_SHAPES = {(10240, 8192), (4096, 14336)}               # (M, K) in cuBLAS terms = (n_out, k)
ATTN_LENGTHS = [128, 512, 1024, 2048, 4096]
ATTN_KV_DECODE = [128, 256, 512, 1024, 2048, 4096, 8192]


def gemm_key(row) -> tuple:
    ta = 1 if row.op == "linear" else 0
    return (DTYPE[row.dtype], ta, 0, int(row.n), int(row.k), int(row.m), int(row.batch))


def is_held_out(family: str, row) -> bool:
    if family == "gemm" and getattr(row, "tag", "") in MODEL_ORDER:
        return MODEL_ORDER.index(row.tag) % 2 == 1
    if family == "gemm":
        if (int(row.n), int(row.k)) in HELD_OUT_SHAPES:
            return True
        m = int(row.m)
        return m in GEMM_TOKENS and GEMM_TOKENS.index(m) % 2 == 1
    if family == "attn":
        if int(row.batch) == 4:
            return True
        length = int(row.kv_len) if row.phase == "decode" else int(row.q_len)
        grid = ATTN_KV_DECODE if row.phase == "decode" else ATTN_LENGTHS
        return length in grid and grid.index(length) % 2 == 1
    if family == "copy":
        return int(math.log2(int(row.bytes))) % 2 == 1
    if family == "kern":        # a workload of the kernels_2026-11-29 recordings (or a microbenchmark row)
        return round(math.log2(float(row.numel))) % 2 == 1
    if family == "vkern":       # a launch size of the vLLM recording: row.pos, its rank among its kernel's sizes
        return int(row.pos) % 2 == 1
    if family == "vgemm":       # row: N, pos (rank of N in its (M, K) family), last (the family's last rank)
        n, pos = int(row.N), int(row.pos)
        if pos == 0 or pos == int(row.last):
            return False
        return GEMM_TOKENS.index(n) % 2 == 1 if n in GEMM_TOKENS else pos % 2 == 1
    if family == "attnstep":    # a case of the vLLM recording (its label) or of vllm_attention_bench.py
        return zlib.crc32(str(row.case_id).encode()) % 2 == 1
    raise ValueError(family)


def _gemm_rows(pd, src):
    g = pd.read_parquet(src / "gemm.parquet")
    g = g[(g["mode"] == "graph") & g.op.isin(["linear", "matmul"]) & g.t_median_us.notna()]
    return g


def _attn_rows(pd, src):
    s = pd.read_parquet(src / "sdpa.parquet")
    # the emulated cuDNN path: the backend PyTorch picks by default (cuDNN on the H200). With K/V repeated to
    # every query head (repeat_kv) the kernel sees as many KV heads as query heads: the MHA layout's rows
    s = s[(s["mode"] == "graph") & (s.backend == "default") & s.gqa.isin(["enable_gqa", "repeat_kv"])
          & s.t_median_us.notna()]
    return s.assign(kv_heads=s.kv_heads.where(s.gqa == "enable_gqa", s.heads))


def attn_work(causal, heads, kv_heads, head_dim, batch, q, kv) -> tuple[float, float]:
    """FLOPs and bytes of one attention call (bf16), as profile.c's attn_model_s counts them."""
    flops = 4.0 * batch * heads * q * kv * head_dim * (0.5 if causal and q == kv else 1.0)
    return flops, 2.0 * batch * (2.0 * q * heads + 2.0 * kv * kv_heads) * head_dim


def fit_attn_model(keys_ns) -> tuple[float, float, float]:
    """(t0_ns, flop/s, byte/s) of t = t0 + max(F / P, B / W) over the fitted attention rows, least squares in
    log time (coarse-to-fine grid search: three parameters, numpy only). profile.c interpolates each measured
    row's residual against this model instead of raw roofline efficiency: a latency floor of several us that
    does not scale with the work is what made batch-4 shapes 20-70% off between batches 1 and 16."""
    import numpy as np

    w = np.array([attn_work(*k) for k, _ in keys_ns])
    y = np.log(np.array([ns for _, ns in keys_ns]) * 1e-9)
    best = (np.inf, None)
    lo, hi = np.log([1e-6, 1e14, 1e12]), np.log([20e-6, 1.2e15, 6e12])
    for _ in range(6):
        axes = [np.linspace(a, b, 25) for a, b in zip(lo, hi)]
        t0, P, W = np.meshgrid(*[np.exp(a) for a in axes], indexing="ij")
        pred = t0[..., None] + np.maximum(w[:, 0] / P[..., None], w[:, 1] / W[..., None])
        sse = ((np.log(pred) - y) ** 2).sum(-1)
        i = np.unravel_index(np.argmin(sse), sse.shape)
        if sse[i] < best[0]:
            best = (sse[i], [axes[j][i[j]] for j in range(3)])
        step = [(b - a) / 24 * 2 for a, b in zip(lo, hi)]
        lo = [c - d for c, d in zip(best[1], step)]
        hi = [c + d for c, d in zip(best[1], step)]
    t0, P, W = np.exp(best[1])
    return float(t0 * 1e9), float(P), float(W)


COPY_OPS = {"H2D_pinned": (1, 1), "H2D_pageable": (1, 0), "D2H_pinned": (2, 1), "D2H_pageable": (2, 0), "D2D": (3, 1)}


def _graph_table(pd, src, table: str):
    """The graph-timed rows of a microbenchmark table, t_median_us being the per-node device time: SLOPE_SRC's
    node_us where it has the table (the per-replay cost removed), else src's per-launch time."""
    if (SLOPE_SRC / f"{table}.parquet").exists():
        t = pd.read_parquet(SLOPE_SRC / f"{table}.parquet")
        t = t[(t["mode"] == "graph") & t.node_us.notna() & (t.node_us > 0)]
        return t.assign(t_median_us=t.node_us)
    t = pd.read_parquet(src / f"{table}.parquet")
    return t[(t["mode"] == "graph") & t.t_median_us.notna()]


def _graph_rows(pd, src, ops):
    """Graph-timed rows of memcpy.parquet for these ops (per-node device time: _graph_table)."""
    c = _graph_table(pd, src, "memcpy")
    return c[c.op.isin(ops)]


def _dense_table(pd, src: pathlib.Path = DENSE_SRC):
    """DENSE_SRC's memcpy rows, the median over its passes per (op, bytes, mode); None where it is absent."""
    if not (src / "memcpy.parquet").exists():
        return None
    t = pd.read_parquet(src / "memcpy.parquet")
    if "error" in t.columns:
        t = t[t.error.isna()]
    return t.groupby(["op", "bytes", "mode"], as_index=False)[["t_median_us", "node_us"]].median()


# Where an eager loop of back-to-back copies times the device, not the host's launch rate (~16-23 us a copy
# on the H200's host): from 64 MiB device to device its time per copy is within 6% of the same copy's node
# time in a graph (memcpy_dense_2026-12-02), except the slow captured sizes (512 MiB, 1 GiB and up: 1.5x as
# long as a node). Pinned copies' loops reach the device from 2 MiB, where they agree with the nodes within
# 4%: they are left out, so that an eager pinned copy above the vLLM recording's sizes (32 KiB) takes the
# node's time rather than an interpolation across 32 KiB-2 MiB.
EAGER_DEVICE_BOUND = {"D2D": 64 << 20}


def _dense_copy_rows(pd, d):
    """Copies from DENSE_SRC, t_median_us being the device time per copy and `graph` whether it was timed as
    a graph node: the per-node time inside a graph (node_us) for D2D and pinned H2D/D2H (graph 1); the eager
    loop's time per copy (graph 0) for pageable ones (not capturable; host-staged, and the host's part is the
    copy's time) and for D2D from the sizes where the loop is device-bound (EAGER_DEVICE_BOUND)."""
    g = d[(d["mode"] == "graph") & d.op.isin(["D2D", "H2D_pinned", "D2H_pinned"]) & (d.node_us > 0)]
    e = d[(d["mode"] == "eager_loop") & (d.op.isin(["H2D_pageable", "D2H_pageable"])
                                         | (d.bytes >= d.op.map(EAGER_DEVICE_BOUND).fillna(float("inf"))))]
    return pd.concat([g.assign(t_median_us=g.node_us, graph=1), e.assign(graph=0)], ignore_index=True)


def _copy_rows(pd, src):
    d = _dense_table(pd)
    if d is not None:
        return _dense_copy_rows(pd, d)
    c = pd.read_parquet(src / "memcpy.parquet")
    c = c[c.op.isin(list(COPY_OPS)) & (c.op != "D2D") & c.t_median_us.notna()]
    # device-to-device copies were also timed inside graphs: take those (device time); the others eager
    return pd.concat([c.assign(graph=0), _graph_rows(pd, src, ["D2D"]).assign(graph=1)], ignore_index=True)


def _set_rows(pd, src):
    """cudaMemsetAsync timed inside CUDA graphs (device time per launch), by bytes."""
    d = _dense_table(pd)
    if d is not None:
        d = d[(d["mode"] == "graph") & (d.op == "memset_cudart") & (d.node_us > 0)]
        return d.assign(t_median_us=d.node_us)
    return _graph_rows(pd, src, ["memset_cudart"])


def dense_fill_table(with_held_out: bool = False):
    """`kern` rows (KERN_KEY columns, ns, source) for PyTorch's uint8 fill kernel (zero_()) from DENSE_SRC:
    the per-node time in a graph minus kgap (profile.c adds kgap to a kern row), keyed by the launch
    (fill_kernels.parquet: name, grid, block of each size's kernel, read with torch.profiler on the same
    lease); sizes split in two launches (2 GiB: int32 indexing) are left out; the median where sizes share a
    key. Split by bytes as the copies are (is_held_out("copy")). Empty where DENSE_SRC is absent."""
    import pandas as pd

    cols = KERN_KEY + ["ns", "source"]
    d = _dense_table(pd)
    if d is None or not (DENSE_SRC / "fill_kernels.parquet").exists():
        return pd.DataFrame(columns=cols)
    f = pd.read_parquet(DENSE_SRC / "fill_kernels.parquet")
    f = f[f.kernel.notna()]
    f = f[f.groupby("bytes").idx.transform("size") == 1]
    grid, block = f.grid.map(json.loads), f.block.map(json.loads)
    f = f.assign(name=f.kernel, **{f"grid_{a}": grid.map(lambda v, i=i: int(v[i])) for i, a in enumerate("xyz")},
                 **{f"block_{a}": block.map(lambda v, i=i: int(v[i])) for i, a in enumerate("xyz")})
    n = d[(d["mode"] == "graph") & (d.op == "fill_zero_torch") & (d.node_us > 0)][["bytes", "node_us"]]
    f = f.merge(n, on="bytes")
    f = f[[with_held_out or not is_held_out("copy", r) for r in f.itertuples()]]
    if f.empty:
        return pd.DataFrame(columns=cols)
    kgap = kernel_gap_ns()
    ns = (f.node_us * 1e3 - kgap).clip(lower=0.3 * f.node_us * 1e3)
    t = f.assign(ns=ns).groupby(KERN_KEY).ns.median().reset_index()
    return t.assign(source=DENSE_SRC.name)[cols]


def _recorded(pd, paths: list[pathlib.Path], columns: list[str]):
    """The recordings' activities (those of paths that exist), these columns; None if there are none."""
    parts = [pd.read_parquet(p, columns=columns) for p in paths if p.exists()]
    return pd.concat(parts, ignore_index=True) if parts else None


def vllm_set_rows(pd, paths: list[pathlib.Path] = VLLM_KERNELS):
    """("set", (bytes,), device ns, held_out) for the memsets of the vLLM recording (cuBLAS's 4-byte
    cudaMemsetAsync before its GEMMs), median per size."""
    m = _recorded(pd, paths, ["kind", "bytes", "dur_ns"])
    if m is None:
        return []
    m = m[(m.kind == "memset") & m.bytes.notna() & (m.bytes > 0)]
    return [("set", (int(r.bytes),), float(r.dur_ns), is_held_out("copy", r))
            for r in m.groupby("bytes").dur_ns.median().reset_index().itertuples()]


# What a torch.profiler (CUPTI) session adds to each kernel's slot inside a CUDA-graph replay, as the recording
# shows it: its start-to-start time of back-to-back tiny kernels (1.18-1.28 us) against the same graph nodes
# timed with events and no profiler in the process (1.02-1.13 us), 150-164 ns; graph_nocupti_2026-12-04's
# clock_state_during.json. vLLM's kernels and GEMMs were recorded that way (its profiler), served without:
# their in-situ slots are taken this much shorter. Measured on tiny kernels only (memcpy, add).
CUPTI_SLOT_NS = 150.0


def vllm_gemm_rows(pd, path: pathlib.Path = VLLM_DIR / "gemm_rows.csv"):
    """("vgemm", key, slot ns at full clock, held_out) for the GEMMs measured inside the real vLLM run: each
    occurrence over the power cap's factor on it, the emulator's model replayed over the recording
    (vllm_gemm_rows.py, power_model.py), so that shim_c/core/power.c stretches them wherever the emulated
    card is capped, like the microbenchmark's full-clock rows."""
    if not path.exists():
        return []
    g = pd.read_csv(path)
    if "full_slot_ns" not in g:
        raise SystemExit(f"{path}: no full_slot_ns column (rebuild it with predictors/vllm_gemm_rows.py)")
    g["pos"] = g.groupby(["a_type", "ta", "tb", "M", "K", "batch"]).N.rank(method="first").astype(int) - 1
    g["last"] = g.groupby(["a_type", "ta", "tb", "M", "K", "batch"]).N.transform("size") - 1
    return [("vgemm", (int(r.a_type), int(r.ta), int(r.tb), int(r.M), int(r.K), int(r.N), int(r.batch)),
             float(r.full_slot_ns) - CUPTI_SLOT_NS, is_held_out("vgemm", r)) for r in g.itertuples()]


def vllm_copy_rows(pd, paths: list[pathlib.Path] = VLLM_KERNELS):
    """("copy", (dir, pinned, bytes), device ns, held_out) for the copies of the vLLM recording (CUPTI's
    device time of vLLM's small cudaMemcpyAsync to and from pinned memory), median per size."""
    m = _recorded(pd, paths, ["kind", "bytes", "copy_kind", "pinned", "dur_ns"])
    if m is None:
        return []
    m = m[(m.kind == "memcpy") & m.copy_kind.isin(["HtoD", "DtoH"]) & m.bytes.notna() & (m.bytes > 0)]
    m = m.assign(dir=m.copy_kind.map({"HtoD": 1, "DtoH": 2}), pinned=m.pinned.fillna(False).astype(int))
    g = m.groupby(["dir", "pinned", "bytes"]).dur_ns.median().reset_index()
    return [("copy", (int(r.dir), int(r.pinned), int(r.bytes)), float(r.dur_ns), is_held_out("copy", r))
            for r in g.itertuples()]


def rows(src: pathlib.Path = DEFAULT_SRC):
    """(family, key tuple, measured ns, held_out) for every usable measurement."""
    import pandas as pd

    out = []
    gemm = _gemm_rows(pd, GEMM_SRC)
    full_clock = {gemm_key(r): r.t_median_us * 1e3 for r in gemm.itertuples()}
    vgemm = vllm_gemm_rows(pd)    # vLLM's own kernels, brought to full clock: they stand in for the microbenchmark's
    in_situ = {key for _, key, _, _ in vgemm}
    out += vgemm
    if (MODELS_SRC / "gemm.parquet").exists():
        models = _gemm_rows(pd, MODELS_SRC)
        gemm = pd.concat([gemm, models[[gemm_key(r) not in full_clock for r in models.itertuples()]]])
    for r in gemm.itertuples():
        if gemm_key(r) not in in_situ:
            out.append(("gemm", gemm_key(r), r.t_median_us * 1e3, is_held_out("gemm", r)))
    for r in _attn_rows(pd, SDPA_SRC).itertuples():
        key = (int(bool(r.causal)), int(r.heads), int(r.kv_heads), int(r.head_dim), int(r.batch), int(r.q_len),
               int(r.kv_len))
        out.append(("attn", key, r.t_median_us * 1e3, is_held_out("attn", r)))
    vcopy = vllm_copy_rows(pd)
    out += vcopy
    in_situ_copies: dict = {}   # (dir, pinned) -> largest size measured in situ
    for _, key, _, _ in vcopy:
        in_situ_copies[key[:2]] = max(in_situ_copies.get(key[:2], 0), key[2])
    for r in _copy_rows(pd, src).itertuples():
        d, pinned = COPY_OPS[r.op]
        # the vLLM recording's eager copies are device times (CUPTI): over their sizes they replace the loops'
        if not r.graph and (d, pinned) in in_situ_copies and r.bytes <= in_situ_copies[(d, pinned)]:
            continue
        out.append(("gcopy" if r.graph else "copy", (d, pinned, int(r.bytes)), r.t_median_us * 1e3,
                    is_held_out("copy", r)))
    vset = vllm_set_rows(pd)
    out += vset
    in_situ_sets = {key for _, key, _, _ in vset}
    for r in _set_rows(pd, src).itertuples():
        if (int(r.bytes),) not in in_situ_sets:
            out.append(("set", (int(r.bytes),), r.t_median_us * 1e3, is_held_out("copy", r)))
    return out


def kernel_rows(paths: list[pathlib.Path] = KERNELS):
    """The recorder's measured launches of the kernel-family workloads: a DataFrame with the workload's
    section, op, dtype, element count and split, the launch key (name, grid, block) and dur_ns."""
    import json
    import pandas as pd

    k = pd.concat([pd.read_parquet(p) for p in paths if p.exists()], ignore_index=True)
    k = k[(k.kind == "kernel") & k.label_stack.notna()]
    def workload_label(stack: str) -> str:  # Inductor pushes labels of its own inside the workload's
        labels = json.loads(stack) if stack.startswith("[") else [stack]
        return next((x for x in reversed(labels) if x.startswith("wl|")), labels[-1] if labels else "")
    lab = k.label_stack.map(workload_label)
    k = k.assign(lab=lab)
    k = k[k.lab.str.startswith("wl|") & k.lab.str.contains("phase=measure")]
    fields = k.lab.str.extract(r"sec=([^|]*)\|op=([^|]*)\|dtype=([^|]*)\|.*numel=(\d+)")
    k = k.assign(sec=fields[0], op=fields[1], dtype=fields[2], numel=fields[3].astype(float))
    k = k[k.sec.isin(KERNEL_SECTIONS)]
    return k.assign(held_out=[is_held_out("kern", r) for r in k[["numel"]].itertuples()])


KERN_KEY = ["name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
ROW_KERNEL = r"^void at::native::reduce_kernel<|at::native::.*vectorized_layer_norm_kernel<.*>\(int,"
WHOLE_REDUCTIONS = {"sum", "argmax", "max", "mean"}   # workloads reducing the whole tensor to one value


def krow_table(with_held_out: bool = False):
    """The `krow` rows: PyTorch's reductions and norms (ROW_KERNEL; profile.c reads the same shape from their
    launch arguments) by (outputs, inputs per output), the median over the fitted launches of the recorder's
    workloads. The shape comes from the launching operator's first input: [rows, L] reduced or normalised
    over L, or one value from the whole tensor (WHOLE_REDUCTIONS)."""
    import json
    import pandas as pd

    k = kernel_rows()
    k = k[k.name.str.contains(ROW_KERNEL, regex=True) & (with_held_out | ~k.held_out) & k.op_input_dims.notna()]
    dims = k.op_input_dims.map(lambda s: json.loads(s)[0] if s.startswith("[") else [])
    ok = dims.map(lambda d: isinstance(d, list) and len(d) >= 1 and all(isinstance(x, int) for x in d))
    k, dims = k[ok], dims[ok]
    whole = k.op.isin(WHOLE_REDUCTIONS)
    outputs = [1 if w else math.prod(d[:-1]) for w, d in zip(whole, dims)]
    inputs = [math.prod(d) if w else d[-1] for w, d in zip(whole, dims)]
    k = k.assign(outputs=outputs, inputs=inputs)
    k = k[(k.outputs > 0) & (k.inputs > 0)]
    return k.groupby(["name", "outputs", "inputs"]).dur_ns.median().rename("ns").reset_index()


def vllm_kernel_rows(paths: list[pathlib.Path] = VLLM_KERNELS):
    """Every kernel launch of the vLLM recording that the profile's kern rows can time: a DataFrame with the
    launch key (name, grid, block), dur_ns, launch_api, blocks (grid product), pos (rank of blocks among the
    distinct block counts of the same name and block shape) and held_out."""
    import pandas as pd

    k = pd.concat([pd.read_parquet(p) for p in paths if p.exists()], ignore_index=True)
    k = k[(k.kind == "kernel") & k.dur_ns.notna() & k.grid_x.notna()]
    k = k[~k.name.str.contains(GEMM_KERNEL, case=False, regex=True) & ~k.name.str.contains(STEP_KERNEL, regex=True)]
    k = k.assign(**{c: k[c].astype(int) for c in KERN_KEY[1:]})
    k = k.assign(blocks=k.grid_x * k.grid_y * k.grid_z)
    shape = ["name", "block_x", "block_y", "block_z"]
    pos = k[shape + ["blocks"]].drop_duplicates().sort_values(shape + ["blocks"])
    pos = pos.assign(pos=pos.groupby(shape).cumcount())
    k = k.merge(pos, on=shape + ["blocks"])
    return k.assign(held_out=[is_held_out("vkern", r) for r in k[["pos"]].itertuples()])


def vllm_kernel_gap_ns(paths: list[pathlib.Path] = VLLM_KERNELS) -> float:
    """Median time from a kernel's end to the next one's start within the same CUDA-graph replay of the
    vLLM recording (back-to-back kernels of a decode step)."""
    import pandas as pd

    k = pd.concat([pd.read_parquet(p, columns=["kind", "stream", "start_ns", "dur_ns", "launch_api"]) for p in paths
                   if p.exists()], ignore_index=True)
    k = k[k.kind == "kernel"].sort_values(["stream", "start_ns"])
    nxt = k.groupby("stream").start_ns.shift(-1)
    gap = (nxt - (k.start_ns + k.dur_ns))[(k.launch_api == "cudaGraphLaunch")]
    gap = gap[(gap >= 0) & (gap < 5000)]
    return float(gap.median())


def kern_table(with_held_out: bool = False):
    """The `kern` rows the table gets, as a DataFrame (KERN_KEY columns, ns, source): the median duration per
    launch key over the fitted launches of the kernels_2026-11-29 recordings, then the vLLM recording's keys
    that these lack, then the other models' vLLM recordings' kernels that neither has."""
    import pandas as pd

    parts = []
    dense = dense_fill_table(with_held_out)
    if len(dense):      # the uint8 fill's per-node times by bytes: before the recorder's rows of the same keys
        parts.append(dense)
    if any(p.exists() for p in KERNELS):
        rec = kernel_rows()
        parts.append(rec[with_held_out | ~rec.held_out].groupby(KERN_KEY).dur_ns.median().rename("ns").reset_index()
                     .assign(source="kernels_2026-11-29"))
    # profile.c adds kgap (measured by the microbenchmarks) after every kern row; inside vLLM's graphs
    # back-to-back kernels are closer: store these rows so that row + kgap is their in-situ slot, less what
    # the recording's profiler added to it (CUPTI_SLOT_NS)
    shift = (vllm_kernel_gap_ns() - CUPTI_SLOT_NS - kernel_gap_ns()) if any(p.exists() for p in VLLM_KERNELS) else 0.0
    # each recording alone, and only for the kernels (name and block shape) those before it lack: profile.c
    # interpolates over the launch size within a kernel, whose work per block may differ between models
    shape = ["name", "block_x", "block_y", "block_z"]
    for path in VLLM_KERNELS + VLLM_EXTRA_KERNELS:
        if not path.exists():
            continue
        v = vllm_kernel_rows([path])
        ns = v[with_held_out | ~v.held_out].groupby(KERN_KEY).dur_ns.median()
        ns = (ns + shift).where(ns + shift > 0.3 * ns, 0.3 * ns).rename("ns").reset_index()
        if parts and path not in VLLM_KERNELS:
            have = pd.concat(parts)[shape].drop_duplicates()
            ns = ns.merge(have.assign(_have=1), on=shape, how="left")
            ns = ns[ns._have.isna()].drop(columns="_have")
        parts.append(ns.assign(source=path.parent.name))
    if not parts:
        return pd.DataFrame(columns=KERN_KEY + ["ns", "source"])
    t = pd.concat(parts, ignore_index=True)
    t = t.assign(**{c: t[c].astype(int) for c in KERN_KEY[1:]}).drop_duplicates(KERN_KEY, keep="first")
    return t.sort_values(KERN_KEY).reset_index(drop=True)


class KernTable:
    """profile.c's kern_predict, in Python, over kern_table()'s rows: exact key, else log-log interpolation
    over the number of blocks between rows of the same name and block shape, proportional above the largest,
    the smallest's time below it; kgap added. None where the name and block shape have no row. Not mirrored:
    profile.c's sibling layer and its cap on scaling up a latency-bound largest row (the vLLM kernels this
    serves have rows of their own)."""

    def __init__(self, table, kgap_ns: float):
        self.kgap = kgap_ns
        self.rows: dict = {}
        for r in table.itertuples():
            self.rows.setdefault((r.name, r.block_x, r.block_y, r.block_z), []).append(
                (r.grid_x * r.grid_y * r.grid_z, (r.grid_x, r.grid_y, r.grid_z), r.ns))
        for v in self.rows.values():
            v.sort(key=lambda x: x[0])

    def predict_ns(self, name: str, grid, block):
        rows = self.rows.get((name, *map(int, block)))
        if not rows:
            return None, "none"
        grid = tuple(map(int, grid))
        blocks = grid[0] * grid[1] * grid[2]
        below = above = None
        for b, g, ns in rows:
            if g == grid:
                return ns + self.kgap, "exact"
            if b <= blocks:
                below = (b, ns)
            elif above is None:
                above = (b, ns)
        if below and above:
            b0, t0 = below
            b1, t1 = above
            ns = t0 if b1 == b0 else math.exp(math.log(t0) + (math.log(blocks) - math.log(b0)) /
                                              (math.log(b1) - math.log(b0)) * (math.log(t1) - math.log(t0)))
        elif below:
            ns = below[1] * max(blocks / below[0], 1)
        else:
            ns = above[1]
        return ns + self.kgap, "interp"


def kernel_gap_ns(src: pathlib.Path = DEFAULT_SRC, paths: list[pathlib.Path] = KERNELS) -> float:
    """What a back-to-back launch adds to a kernel's own execution: the microbenchmarks' per-node time inside
    a CUDA graph (SLOPE_SRC's node_us where present) minus the recorder's execution time, for the same small
    elementwise ops (fit rows)."""
    import pandas as pd

    mb = _graph_table(pd, src, "elementwise")
    mb = mb[mb.op.isin(["add", "mul", "silu", "gelu"]) & (mb.numel <= 2**16)]
    mb = mb[mb.numel.map(lambda n: round(math.log2(n)) % 2 == 0)]
    rec = kernel_rows(paths)
    rec = rec[~rec.held_out].groupby(["op", "dtype", "numel"]).dur_ns.median().rename("rec_ns").reset_index()
    j = mb.merge(rec, on=["op", "dtype", "numel"])
    return float((j.t_median_us * 1e3 - j.rec_ns).median())


# Host costs per call that the real runtime and libraries spend beyond what the emulation itself charges
# (its CPU time here, shim included, priced by the host pace: coordinator/pace.py, 1.29 in this machine's
# usual state). Fitted, one metric each, on host.parquet of the two H200 runs (geometric mean of the runs,
# whose hosts differed by about 2x) minus 1.29x the same microbenchmark's CPU time under emulation on the
# 2-core development machine with TIMEWARP_SHADOW=0 and no host costs (median of 4 runs of
#   TIMEWARP_HOST_PACE=0 TIMEWARP_SHADOW=0 TIMEWARP_PROFILE=<profile.tsv without its host lines> timewarp run --
#   python predictors/calibration/microbench_h200.py OUT --sections host
# with the clock readings' own cost deducted, shim_c/core/vclock.c):
#   launch_ns:       eager add_ of one element, 7.49 us real vs 2.52 us emulated (x1.29: 3.25)
#   graph_launch_ns: replay of a 100-kernel graph, host side, 3.92 vs 1.14 us (1.47)
#   gemm_ns:         eager F.linear 1x64x64 bf16, 17.06 vs 3.58 (4.62) + launch_ns us (cuBLAS's host work)
#   attention_ns:    eager tiny SDPA bf16, 22.0 vs 6.37 (8.22) + launch_ns us (cuDNN's plan execution)
#   sync_ns:         torch.cuda.synchronize() on an idle GPU, 6.33 vs 3.93 (5.07) us (median of 3; the
#                    driver's wake-up after the work is done, charged by every blocking synchronize)
# The other host metrics (silu, add with allocation, launch then synchronize) and the demo's decode are the
# checks. These depend on the host CPU of the target machine as much as on the GPU (docs/LIMITATIONS.md).
# module_load_ns, module_load_ns_per_mb: CUDA's lazy module loading, the host CPU the first use of a module's
# kernel costs (shim_c/cudart/launch.c), fitted on predictors/data/h200/lazy_loading_2026-11-30: per PyTorch
# operation, first call minus second under CUDA_MODULE_LOADING=LAZY, minus the same under EAGER, against the
# modules the same operations load under emulation (TIMEWARP_LAZY_LOG=1) and their fatbinaries' sizes;
# least squares over the 22 operations of the two repetitions' mean (4.1 and 11.1 ms per module in each:
# the lease's first process was slower). multinomial (8 modules, 9.8 MB), not fitted: 128 ms predicted,
# 98-169 ms measured.
# graph_upload_ns, graph_upload_ns_per_node: an executable graph's upload at its first launch (or at
# cudaGraphUpload), shim_c/core/graph.c; predictors/data/h200/graph_upload_2026-11-30: first minus second
# replay of PyTorch graphs of 1-1000 in-place adds, host time of the call, 3 graphs per size on two runs:
# 1.0 us per node (least squares: 1.001), fixed 8 us (N=1: 5.5-13 us; the least-squares intercept, 20 us,
# carries the 1000-node graphs' spread).
# blas_kernel_load_ns: cuBLAS loading a GEMM kernel at its first use in the process (shim_c/core/blas_lazy.c),
# predictors/data/h200/launch_queue_2026-12-01/cublas_first_use.json: first call of a new shape with the GPU
# idle minus the second, for the three shapes whose first call loaded a kernel (o, gate_up and lm_head: 2.83,
# 2.52 and 2.34 ms, mean 2.56; qkv and down reused a kernel already loaded: 0.13-0.16 ms).
HOST_COSTS_NS = {"launch_ns": 4240, "graph_launch_ns": 2450, "gemm_ns": 8200, "attention_ns": 9540,
                 "sync_ns": 1260, "module_load_ns": 7570000, "module_load_ns_per_mb": 6950000,
                 "graph_upload_ns": 8000, "graph_upload_ns_per_node": 1000, "blas_kernel_load_ns": 2560000}


# Which cuBLAS kernel each bf16 linear layer's GEMM runs at every token count (1-8192; lm_head rows 1-1024)
# for four models' projections, measured on the H200 (predictors/calibration/cublas_kernel_table.py,
# data/h200/cublas_kernels_2026-12-01). shim_c/core/blas_lazy.c loads a kernel at its first use with it.
BLAS_KERNELS = HERE / "data" / "h200" / "cublas_kernels_2026-12-01" / "cublas_kernel_table.json.gz"


def blas_kernel_rows(path: pathlib.Path = BLAS_KERNELS) -> list[tuple[int, ...]]:
    """Rows (m, k, first token count, last, kernel id, second kernel's id or 0, memset 1/0) in cuBLAS's
    terms (m: the layer's output features, k: its input features, n: tokens; A transposed). A kernel's id
    is the same wherever its name recurs: a kernel loaded by one shape is loaded for every shape that runs
    it. The second kernel is a split-K reduction; the memset comes before stream-K/cooperative kernels."""
    if not path.exists():
        return []
    ids: dict[str, int] = {}
    out = []
    for projs in json.loads(gzip.decompress(path.read_bytes()))["models"].values():
        for t in projs.values():
            for first, last, ki, memset in t["runs"]:
                names = t["kernels"][ki].split("+")
                kid = [ids.setdefault(nm, len(ids) + 1) for nm in names] + [0]
                out.append((t["n"], t["k"], first, last, kid[0], kid[1], memset))
    return sorted(out)


def build(src: pathlib.Path = DEFAULT_SRC, out: pathlib.Path = DEFAULT_OUT, with_held_out: bool = True) -> int:
    """Write the table: with every measured row (the shipped profile), or without the held-out ones (the one
    `timewarp validate` measures the held-out errors with). The FA3 step model (attnstep) and the launch gap
    are fitted on the fitted rows in both."""
    which = "every measured row" if with_held_out else "held-out rows excluded"
    lines = [f"# measured profile for the C core (shim_c/core/profile.c); built by predictors/profile_build.py from "
             f"{src.relative_to(HERE) if src.is_relative_to(HERE) else src} (GEMMs, attention: "
             f"{GEMM_SRC.relative_to(HERE)}, {MODELS_SRC.relative_to(HERE)}, {SDPA_SRC.relative_to(HERE)}); {which}; "
             "do not edit",
             "gpu\tH200"]
    n = 0
    measured = sorted(rows(src))
    for family, key, ns, held in measured:
        if held and not with_held_out:
            continue
        lines.append("\t".join(["gemm" if family == "vgemm" else family, *map(str, key), f"{ns:.0f}"]))
        n += 1
    attn_fit = [(key, ns) for family, key, ns, held in measured if family == "attn" and (with_held_out or not held)]
    if attn_fit:
        lines.append("attnmodel\t" + "\t".join(f"{c:.6g}" for c in fit_attn_model(attn_fit)))
    lines += [f"host\t{k}\t{v}" for k, v in HOST_COSTS_NS.items()]
    if any(p.exists() for p in KERNELS):
        gap = kernel_gap_ns(src)
        lines.append(f"kgap\t{gap:.0f}")
    if (VLLM_DIR / "attention.csv").exists():
        from . import fit_attention

        coef = fit_attention.fit().coef
        lines.append("attnstep\t" + "\t".join(f"{c:.6g}" for c in coef))
        n += 1
    from . import fit_moe
    if (fit_moe.DATA / "moe_kernels.csv").exists():
        lines.append(fit_moe.profile_row())   # fitted on its own fixed split, as attnstep is
        n += 1
    from . import fit_gemm_align
    if fit_gemm_align.DATA.exists():
        lines.append(fit_gemm_align.profile_row())   # likewise
        n += 1
    from . import fit_inductor
    if fit_inductor.DATA.exists():
        lines.append(fit_inductor.profile_row())   # likewise
        n += 1
    if any(p.exists() for p in KERNELS):
        for r in krow_table(with_held_out).itertuples():
            lines.append("\t".join(["krow", str(int(r.outputs)), str(int(r.inputs)), f"{r.ns:.0f}", r.name]))
            n += 1
    for r in kern_table(with_held_out).itertuples():
        lines.append("\t".join(["kern", *(str(int(getattr(r, d))) for d in KERN_KEY[1:]), f"{r.ns:.0f}", r.name]))
        n += 1
    # not durations: which kernel each shape runs (no held-out split: nothing is fitted to them)
    for row in blas_kernel_rows():
        lines.append("\t".join(["blaskern", *map(str, row)]))
        n += 1
    out.write_text("\n".join(lines) + "\n")
    return n


if __name__ == "__main__":
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SRC
    for dst, every in ((DEFAULT_OUT, True), (FIT_OUT, False)):
        print(f"{build(src, dst, every)} rows -> {dst}")
