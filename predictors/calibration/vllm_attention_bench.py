"""GPU time of vLLM 0.24.0's FlashAttention-3 calls and KV-cache writes, for a Llama-3-8B-shaped layer, on a real H200.

Run on the GPU machine (vLLM 0.24.0, torch 2.11):
    python vllm_attention_bench.py [--out DIR] [--budget-s 150] [--quick] [--only REGEX]
Check that it runs end to end under the emulator (timings are predictions there):
    TIMEWARP_SHADOW=0 timewarp run -- python vllm_attention_bench.py --out /tmp/attn_out --quick
(TIMEWARP_SHADOW=0: with timewarp's torch shadow mode on, FA3 calls that end in the semaphore reset, i.e. one
split, fail with pybind11's "Unable to cast Python instance of type <class 'list'>"; an emulator issue.)

What is measured, and why it is called this way
-----------------------------------------------
The attention call reproduces `FlashAttentionImpl.forward` of vLLM 0.24.0's FLASH_ATTN backend
(vllm/v1/attention/backends/flash_attn.py) for the non-cascade, non-DCP decoder path, with the metadata that
`FlashAttentionMetadataBuilder.build` produces, for 32 query heads, 8 KV heads, head dim 128, bf16:

  * KV cache: one tensor of shape (num_blocks, 2, block_size, 8, 128) (`get_kv_cache_shape`, NHD layout, the
    default without a KV connector), split with `kv_cache.unbind(1)`, so key/value caches are strided views.
    block_size = 16: CacheConfig.DEFAULT_BLOCK_SIZE, which the FA backend keeps (it supports MultipleOf(16)).
  * Per step, once for all layers: `get_scheduler_metadata(batch_size=num_reqs, max_seqlen_q=max_query_len,
    max_seqlen_k=max_seq_len, num_heads_q=32, num_heads_kv=8, headdim=128, cache_seqlens=seq_lens,
    qkv_dtype=bfloat16, cu_seqlens_q=query_start_loc, page_size=16, causal=True, window_size=(-1, -1),
    num_splits=max_num_splits)` (FA3's AOT scheduler; it launches a small "prepare" kernel).
  * Per layer: `flash_attn_varlen_func(q, k=key_cache, v=value_cache, out, cu_seqlens_q=query_start_loc,
    max_seqlen_q, seqused_k=seq_lens, max_seqlen_k, softmax_scale=128**-0.5, causal=True, alibi_slopes=None,
    window_size=[-1, -1], block_table, softcap=0, scheduler_metadata, fa_version=3,
    q_descale/k_descale/v_descale=<scalar 1.0>.expand(num_reqs, 8), dynamic_causal=None,
    num_splits=max_num_splits, s_aux=None, mask_mod=None, aux_tensors=None)`.
  * KV write, per layer: `torch.ops._C_cache_ops.reshape_and_cache_flash(key, value, key_cache, value_cache,
    slot_mapping, "auto", k_scale, v_scale)` with key/value strided views of a fused qkv activation.

max_num_splits is where vLLM's modes differ, hence two variants:
  * maxsplits32: vLLM's default (cudagraph_mode FULL_AND_PIECEWISE). The builder then sets max_num_splits to
    `flash_attn_max_num_splits_for_cuda_graph` (32) for every batch of at most max_cudagraph_capture_size
    tokens (512 on an H200 with default max_num_seqs=1024), whether the batch is then replayed in a full graph
    (uniform decode) or runs piecewise (mixed/prefill); the metadata is copied into a persistent buffer sized
    for max_num_seqs. FA3 then always launches its combine kernel (num_splits > 1 means "upper bound", the real
    split per request is chosen on the device by the prepare kernel). Measured only where it applies
    (sum of query lengths <= --cg-max-tokens); above that vLLM passes 0 even in its default mode.
  * maxsplits0: enforce_eager or cudagraph modes without full graphs, and the default mode's batches above
    512 tokens: FA3's own num_splits heuristic.
Column `vllm_default` marks the rows (variant, timing) that vLLM's default configuration would actually run.

Timing modes (column `timing`):
  * graph: `inner` back-to-back calls captured in one CUDA graph, replayed `reps` times between CUDA events:
    device time without launch gaps. For uniform decode under maxsplits32 this is what vLLM's full CUDA graph
    replays (vLLM captures with dummy lengths and replays with fresh metadata; FA3's kernel choice depends on
    max_seqlen_q, heads, head dim, paging and num_splits, which match, and reads per-request lengths and splits
    from device memory at replay).
  * eager: the same `inner` calls issued from Python between CUDA events: what piecewise mode sees, and
    launch-bound when the kernels are shorter than the host's per-call cost.
Inputs rotate over `n_rot` disjoint sets of KV blocks (and q/out buffers) so that, as across the 32 layers of a
real model, a call does not find the previous call's KV cache in the 60 MB L2 (about --rot-mib in all; at most
--max-rot sets, so the smallest batches, under ~4 MiB of KV, stay partly L2-resident).
Per-call times are rep time / inner; us_median/us_p10/us_p90 are over the reps. num_splits_arg is what was
passed; num_splits is the largest per-request split FA3 chose (read back from the scheduler metadata, 1 = none).
causal_work = sum_i q_i*(k_i - q_i) + q_i*(q_i + 1)/2, the score entries a causal kernel must compute.

Outputs (under --out, default $OUT or /tmp/out; CSVs are written row by row, so a run cut short keeps data):
  attention.csv    one row per (case, variant, timing)
  cache_write.csv  reshape_and_cache_flash by num_tokens and slot pattern (prefill: one request, consecutive
                   slots in random blocks; decode: one token per request, each in its own random block)
  kernels.json     kernels (name, grid, block, device duration) read with torch.profiler for a few calls per
                   variant: which kernels a call launches (FlashAttnFwdSm90, combine, prepare, fill)
  provenance.json  GPU, driver, versions, date, command, arguments, elapsed, skipped cases, errors
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

T0 = time.perf_counter()

# Llama-3-8B attention geometry (TP=1).
NUM_Q_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128
DTYPE = torch.bfloat16
QKV_WIDTH = (NUM_Q_HEADS + 2 * NUM_KV_HEADS) * HEAD_DIM  # fused qkv_proj output, which q/k/v are views of

ATTN_COLUMNS = [
    "case_id", "kind", "variant", "timing", "vllm_default", "num_reqs", "sum_q", "max_q", "sum_k", "max_k",
    "sum_qk", "causal_work", "q_lens", "k_lens", "num_splits_arg", "num_splits", "us_median", "us_p10", "us_p90",
    "reps", "inner", "n_rot", "kv_blocks", "sched_meta_us",
]
CACHE_COLUMNS = ["num_tokens", "pattern", "timing", "us_median", "us_p10", "us_p90", "reps", "inner", "n_rot"]


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def cdiv(a, b):
    return -(-a // b)


# ----------------------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------------------

def make_case(case_id, kind, q_lens, k_lens):
    q = np.asarray(q_lens, dtype=np.int64)
    k = np.asarray(k_lens, dtype=np.int64)
    assert q.shape == k.shape and (q >= 1).all() and (k >= q).all(), case_id
    return {
        "case_id": case_id, "kind": kind, "q": q, "k": k,
        "num_reqs": len(q), "sum_q": int(q.sum()), "max_q": int(q.max()), "sum_k": int(k.sum()),
        "max_k": int(k.max()), "sum_qk": int((q * k).sum()),
        # Score entries a causal kernel must compute: full rows over the prefix, a triangle over the new tokens.
        "causal_work": int((q * (k - q) + q * (q + 1) // 2).sum()),
    }


def build_cases(quick, seed):
    """Returns the case list, interleaved across kinds so that a run cut short by the budget covers each kind."""
    rng = np.random.default_rng(seed)
    if quick:
        dec_b, dec_k = [1, 32], [512, 4096]
        mix_b = [16]
        pre_l = [256, 2048]
        multi = [(4, 512)]
        chunk = [(1024, 2048, 16, 512), (256, 0, 0, 0)]
    else:
        dec_b, dec_k = [1, 2, 4, 8, 16, 32, 64, 128, 256], [128, 512, 1024, 2048, 4096, 8192]
        # Multiples of 8 up to 256 are vLLM capture sizes, so these are replayed unpadded in full graphs too.
        mix_b = [8, 32, 64, 128, 256]
        pre_l = [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
        multi = [(b, l) for b in (2, 4, 8, 16) for l in (256, 512, 1024, 2048) if b * l <= 8192]
        chunk = []
        for q in (256, 1024, 2048, 4096):
            for prefix in (0, 2048, 6144):
                for d in (0, 16, 64, 127):
                    for dk in ((0,) if d == 0 else (512, 2048)):
                        chunk.append((q, prefix, d, dk))

    decode = [make_case(f"decode_b{b}_k{k}", "decode", [1] * b, [k] * b) for b in dec_b for k in dec_k]
    for i, b in enumerate(mix_b):
        ks = rng.integers(64, 4096, size=b, endpoint=True)
        decode.append(make_case(f"decode_mixk_b{b}_s{seed}_{i}", "decode", [1] * b, ks))
    prefill = [make_case(f"prefill_l{l}", "prefill", [l], [l]) for l in pre_l]
    prefill += [make_case(f"prefill_b{b}_l{l}", "prefill", [l] * b, [l] * b) for b, l in multi]
    # Decodes first, then the chunk: vLLM schedules running requests before the chunk of a newer prompt.
    mixed = [make_case(f"mixed_q{q}_p{p}_d{d}" + (f"_k{dk}" if d else ""), "mixed",
                       [1] * d + [q], [dk] * d + [q + p]) for q, p, d, dk in chunk]
    groups = [decode, prefill, mixed]
    out = []
    for i in range(max(len(g) for g in groups)):
        for g in groups:
            if i < len(g):
                out.append(g[i])
    return out


# ----------------------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------------------

def stats_us(ms_per_rep, inner):
    a = np.asarray(ms_per_rep, dtype=np.float64) * 1e3 / inner
    return {"us_median": float(np.median(a)), "us_p10": float(np.percentile(a, 10)),
            "us_p90": float(np.percentile(a, 90)), "reps": len(a)}


def estimate_us(fn, n=3):
    """Warm-up: n eager calls; returns the per-call time in microseconds (an upper bound of device time)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for i in range(n):
        fn(i)
    e.record()
    torch.cuda.synchronize()
    return max(s.elapsed_time(e) * 1e3 / n, 0.01)


def time_reps(launch_rep, rep_us_guess, args):
    """Times launch_rep() between CUDA events; the number of reps covers about --target-ms (5..200)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    launch_rep()
    e.record()
    torch.cuda.synchronize()
    rep_us = max(s.elapsed_time(e) * 1e3, rep_us_guess * 0.1, 0.01)
    reps = int(min(args.max_reps, max(args.min_reps, math.ceil(args.target_ms * 1e3 / rep_us))))
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    # Reps are queued back to back with no host sync between them, so the device never idles in graph mode.
    for s, e in evs:
        s.record()
        launch_rep()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in evs]


def measure(fn, t_est_us, n_rot, timing, args):
    """fn(i) issues call i (rotation i % n_rot). Returns stats per call and the number of calls per rep."""
    inner = int(min(args.max_inner, max(n_rot, math.ceil(args.rep_us / t_est_us), 1)))
    if timing == "graph":
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(inner):
                fn(i)
        g.replay()
        torch.cuda.synchronize()
        ms = time_reps(g.replay, inner * t_est_us, args)
        del g
    else:
        def rep():
            for i in range(inner):
                fn(i)
        ms = time_reps(rep, inner * t_est_us, args)
    out = stats_us(ms, inner)
    out["inner"] = inner
    return out


# ----------------------------------------------------------------------------------------------------------
# The benchmark
# ----------------------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, args, pool_blocks, vllm_fns):
        self.args = args
        self.dev = torch.device(args.device)
        self.bs = args.block_size
        self.fa_varlen, self.get_sched_meta, self.cache_op = vllm_fns
        self.pool_blocks = pool_blocks
        self.block_bytes = 2 * self.bs * NUM_KV_HEADS * HEAD_DIM * 2
        self.gen = torch.Generator().manual_seed(args.seed)
        # FlashAttentionBackend.get_kv_cache_shape, NHD stride order: (num_blocks, 2, block_size, kv_heads, dim).
        self.kv_cache = torch.empty((pool_blocks, 2, self.bs, NUM_KV_HEADS, HEAD_DIM), dtype=DTYPE, device=self.dev)
        self.kv_cache.normal_()
        self.key_cache, self.value_cache = self.kv_cache.unbind(1)
        # layer._q_scale/_k_scale/_v_scale: 0-d float32 buffers at 1.0 for an unquantized KV cache.
        self.scale_one = torch.tensor(1.0, dtype=torch.float32, device=self.dev)
        # Full-graph mode: the builder copies the metadata into a persistent buffer sized for max_num_seqs.
        n = 1 + cdiv(max(args.max_num_seqs, args.cg_max_tokens), 4) * 4 * 4
        self.sched_buf = torch.zeros(n, dtype=torch.int32, device=self.dev)
        self.softmax_scale = HEAD_DIM ** -0.5

    def n_rot_for(self, nbytes, nblocks):
        want = cdiv(self.args.rot_mib << 20, max(nbytes, 1))
        return int(max(1, min(want, self.args.max_rot, self.pool_blocks // max(nblocks, 1))))

    # --- attention ---------------------------------------------------------------------------------------

    def setup_case(self, case):
        """Device tensors for one batch: lengths, n_rot block tables over disjoint random blocks, q/out."""
        q, k = case["q"], case["k"]
        b = case["num_reqs"]
        nb = np.array([cdiv(int(x), self.bs) for x in k], dtype=np.int64)
        total = int(nb.sum())
        n_rot = self.n_rot_for(total * self.block_bytes, total)
        width = cdiv(max(self.args.max_model_len, case["max_k"]), self.bs)  # vLLM's block table row width
        perm = torch.randperm(self.pool_blocks, generator=self.gen)[: n_rot * total].numpy().astype(np.int32)
        bt = np.zeros((n_rot, b, width), dtype=np.int32)
        req = np.repeat(np.arange(b), nb)
        col = np.arange(total) - np.repeat(np.cumsum(nb) - nb, nb)
        for r in range(n_rot):
            bt[r, req, col] = perm[r * total:(r + 1) * total]
        t = case["sum_q"]
        qkv_bytes = t * QKV_WIDTH * 2
        n_q = int(max(1, min(n_rot, (self.args.q_rot_mib << 20) // max(qkv_bytes, 1))))
        qkv = [torch.empty((t, QKV_WIDTH), dtype=DTYPE, device=self.dev).normal_() for _ in range(n_q)]
        return {
            "n_rot": n_rot, "kv_blocks": total,
            "query_start_loc": torch.tensor(np.concatenate([[0], np.cumsum(q)]), dtype=torch.int32, device=self.dev),
            "seq_lens": torch.tensor(k, dtype=torch.int32, device=self.dev),
            "block_tables": [torch.from_numpy(bt[r]).to(self.dev) for r in range(n_rot)],
            # Attention.forward: query.view(-1, num_heads, head_size) of the qkv split (a strided view).
            "queries": [x[:, : NUM_Q_HEADS * HEAD_DIM].view(-1, NUM_Q_HEADS, HEAD_DIM) for x in qkv],
            "outputs": [torch.empty((t, NUM_Q_HEADS, HEAD_DIM), dtype=DTYPE, device=self.dev) for _ in range(n_q)],
            # FlashAttentionImpl.forward: layer._x_scale.expand((num_reqs, num_kv_heads)).
            "descale": self.scale_one.expand((b, NUM_KV_HEADS)),
        }

    def sched_meta(self, case, st, max_num_splits):
        return self.get_sched_meta(
            batch_size=case["num_reqs"], max_seqlen_q=case["max_q"], max_seqlen_k=case["max_k"],
            num_heads_q=NUM_Q_HEADS, num_heads_kv=NUM_KV_HEADS, headdim=HEAD_DIM,
            cache_seqlens=st["seq_lens"], qkv_dtype=DTYPE, cu_seqlens_q=st["query_start_loc"],
            page_size=self.bs, causal=True, window_size=(-1, -1), num_splits=max_num_splits)

    def attn_fn(self, case, st, meta, max_num_splits):
        n_rot, n_q = st["n_rot"], len(st["queries"])
        d = st["descale"]

        def call(i):
            self.fa_varlen(
                q=st["queries"][i % n_q], k=self.key_cache, v=self.value_cache, out=st["outputs"][i % n_q],
                cu_seqlens_q=st["query_start_loc"], max_seqlen_q=case["max_q"], seqused_k=st["seq_lens"],
                max_seqlen_k=case["max_k"], softmax_scale=self.softmax_scale, causal=True, alibi_slopes=None,
                window_size=[-1, -1], block_table=st["block_tables"][i % n_rot], softcap=0,
                scheduler_metadata=meta, fa_version=3, q_descale=d, k_descale=d, v_descale=d,
                dynamic_causal=None, num_splits=max_num_splits, s_aux=None, mask_mod=None, aux_tensors=None)
        return call

    def make_meta(self, case, st, max_num_splits, full_cg):
        meta = self.sched_meta(case, st, max_num_splits)
        if full_cg:
            n = meta.shape[0]
            self.sched_buf[:n] = meta
            self.sched_buf[n:] = 0
            meta = self.sched_buf[:n]
        return meta

    @staticmethod
    def read_num_splits(meta, num_reqs):
        """Largest per-request split count chosen by FA3's prepare kernel, read back from the metadata.

        Layout (vllm-flash-attn hopper/flash_api.cpp): b4 = round_up(num_reqs, 4); vectors of b4 ints
        {prepare_seqlen_q, [num_splits_dynamic], [varlen_batch_idx], [num_nheads_in_l2]} then 1 semaphore. Our
        calls are causal (head_swizzle vector present) and unsorted, so 3 vectors mean dynamic splits, 2 mean 1.
        """
        b4 = cdiv(num_reqs, 4) * 4
        nvec = (meta.shape[0] - 1) // b4
        if nvec <= 2:
            return 1
        return int(meta[b4: b4 + num_reqs].max().item())

    def time_sched_meta(self, case, st, max_num_splits, n=10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            self.sched_meta(case, st, max_num_splits)
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) * 1e3 / n

    def run_case(self, case, variants, timings, errors):
        """Rows of one case; a failing (variant, timing) is logged into errors and the others still run."""
        st = self.setup_case(case)
        rows = []
        small = case["sum_q"] <= self.args.cg_max_tokens
        for variant in variants:
            if variant == "maxsplits32" and not small:
                continue  # vLLM passes 0 above max_cudagraph_capture_size even in its default mode
            mns = self.args.cg_max_splits if variant == "maxsplits32" else 0
            try:
                meta = self.make_meta(case, st, mns, full_cg=(variant == "maxsplits32"))
                fn = self.attn_fn(case, st, meta, mns)
                t_est = estimate_us(fn)
                num_splits = self.read_num_splits(meta, case["num_reqs"])
                sched_us = self.time_sched_meta(case, st, mns)  # returns fresh tensors; `meta` is untouched
            except Exception as e:  # noqa: BLE001
                errors.append(f"{case['case_id']} {variant}: {e!r}")
                log(f"{case['case_id']} {variant} failed: {e!r}\n{traceback.format_exc()}")
                continue
            for timing in timings:
                try:
                    r = measure(fn, t_est, st["n_rot"], timing, self.args)
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{case['case_id']} {variant} {timing}: {e!r}")
                    log(f"{case['case_id']} {variant} {timing} failed: {e!r}")
                    continue
                if variant == "maxsplits32":
                    # Uniform decode is replayed in a full graph; other batches run the call eagerly (piecewise).
                    default = int((timing == "graph") == (case["kind"] == "decode"))
                else:
                    default = int(not small and timing == "eager")
                rows.append({
                    **{c: case[c] for c in ("case_id", "kind", "num_reqs", "sum_q", "max_q", "sum_k", "max_k",
                                            "sum_qk", "causal_work")},
                    "variant": variant, "timing": timing, "vllm_default": default,
                    "q_lens": ";".join(map(str, case["q"])), "k_lens": ";".join(map(str, case["k"])),
                    "num_splits_arg": mns, "num_splits": num_splits, **r, "n_rot": st["n_rot"],
                    "kv_blocks": st["kv_blocks"], "sched_meta_us": round(sched_us, 3)})
        del st
        return rows

    # --- KV-cache write -----------------------------------------------------------------------------------

    def cache_write_setup(self, num_tokens, pattern):
        nbytes = num_tokens * 2 * NUM_KV_HEADS * HEAD_DIM * 2
        nblocks = num_tokens if pattern == "decode" else cdiv(num_tokens, self.bs)
        n_rot = self.n_rot_for(nbytes, nblocks)
        perm = torch.randperm(self.pool_blocks, generator=self.gen)[: n_rot * nblocks].view(n_rot, nblocks)
        if pattern == "decode":
            offs = torch.randint(0, self.bs, (n_rot, num_tokens), generator=self.gen)
            slots = perm * self.bs + offs
        else:
            pos = torch.arange(num_tokens)
            slots = perm[:, pos // self.bs] * self.bs + pos % self.bs
        n_src = int(max(1, min(n_rot, (self.args.q_rot_mib << 20) // (num_tokens * QKV_WIDTH * 2))))
        qkv = [torch.empty((num_tokens, QKV_WIDTH), dtype=DTYPE, device=self.dev).normal_() for _ in range(n_src)]
        q_end, k_end = NUM_Q_HEADS * HEAD_DIM, (NUM_Q_HEADS + NUM_KV_HEADS) * HEAD_DIM
        keys = [x[:, q_end:k_end].view(-1, NUM_KV_HEADS, HEAD_DIM) for x in qkv]
        values = [x[:, k_end:].view(-1, NUM_KV_HEADS, HEAD_DIM) for x in qkv]
        slot_maps = [slots[r].to(torch.int64).to(self.dev) for r in range(n_rot)]  # vLLM's slot_mapping is int64

        def call(i):
            self.cache_op(keys[i % n_src], values[i % n_src], self.key_cache, self.value_cache,
                          slot_maps[i % n_rot], "auto", self.scale_one, self.scale_one)
        return call, n_rot

    def run_cache_write(self, num_tokens, pattern, timings):
        fn, n_rot = self.cache_write_setup(num_tokens, pattern)
        t_est = estimate_us(fn)
        rows = []
        for timing in timings:
            r = measure(fn, t_est, n_rot, timing, self.args)
            rows.append({"num_tokens": num_tokens, "pattern": pattern, "timing": timing, **r, "n_rot": n_rot})
        return rows

    # --- kernel identities ----------------------------------------------------------------------------------

    def profile_kernels(self, fn, n=2):
        """Kernels that fn() launches, from torch.profiler's Chrome trace (which carries grid and block)."""
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
        finally:
            os.unlink(path)
        out = []
        for ev in trace.get("traceEvents", []):
            if ev.get("ph") == "X" and ev.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy"):
                a = ev.get("args", {})
                out.append({"name": ev.get("name"), "cat": ev.get("cat"), "grid": a.get("grid"),
                            "block": a.get("block"), "dur_us": ev.get("dur"),
                            "shared_memory": a.get("shared memory"), "registers": a.get("registers per thread")})
        return out


# ----------------------------------------------------------------------------------------------------------
# Provenance
# ----------------------------------------------------------------------------------------------------------

def run_cmd(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"


def provenance(args, extra):
    p = {
        "run_date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "args": vars(args), "host": socket.gethostname(), "platform": platform.platform(),
        "python": sys.version.split()[0], "cpu_count": os.cpu_count(),
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "model": {"num_q_heads": NUM_Q_HEADS, "num_kv_heads": NUM_KV_HEADS, "head_dim": HEAD_DIM,
                  "dtype": str(DTYPE), "kv_cache_layout": "NHD", "block_size": args.block_size},
    }
    try:
        import vllm
        p["vllm"] = vllm.__version__
    except Exception as e:  # noqa: BLE001
        p["vllm"] = f"unavailable: {e}"
    try:
        import importlib.metadata as md
        p["flash_attn"] = {"bundled": "vllm.vllm_flash_attn (_vllm_fa3_C), version follows vllm"}
        try:
            p["flash_attn"]["flash-attn package"] = md.version("flash-attn")
        except md.PackageNotFoundError:
            pass
    except Exception:  # noqa: BLE001
        pass
    try:
        dp = torch.cuda.get_device_properties(torch.device(args.device))
        p["gpu"] = {"name": dp.name, "sm_count": dp.multi_processor_count, "capability": f"{dp.major}.{dp.minor}",
                    "total_memory_gib": round(dp.total_memory / 2 ** 30, 2)}
    except Exception as e:  # noqa: BLE001
        p["gpu"] = f"unavailable: {e}"
    p["nvidia_smi"] = run_cmd(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                               "power.draw,temperature.gpu", "--format=csv"])
    p.update(extra)
    return p


# ----------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------

class CsvOut:
    """A CSV written and flushed row by row."""

    def __init__(self, path, columns):
        import csv
        self.f = open(path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=columns, extrasaction="ignore")
        self.w.writeheader()
        self.n = 0

    def add(self, rows):
        for r in rows:
            self.w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
            self.n += 1
        self.f.flush()

    def close(self):
        self.f.close()


def load_vllm():
    """The functions vLLM's FLASH_ATTN backend binds on CUDA (vllm/v1/attention/backends/fa_utils.py)."""
    from vllm._custom_ops import reshape_and_cache_flash
    from vllm.vllm_flash_attn import flash_attn_varlen_func, get_scheduler_metadata
    info = {}
    try:
        from vllm.v1.attention.backends.fa_utils import get_flash_attn_version
        info["fa_version_vllm_would_pick"] = get_flash_attn_version(head_size=HEAD_DIM)
    except Exception as e:  # noqa: BLE001
        info["fa_version_vllm_would_pick"] = f"unavailable: {e}"
    try:
        from vllm.config.cache import CacheConfig
        info["vllm_default_block_size"] = CacheConfig.DEFAULT_BLOCK_SIZE
    except Exception as e:  # noqa: BLE001
        info["vllm_default_block_size"] = f"unavailable: {e}"
    try:
        from vllm.config.attention import AttentionConfig
        info["vllm_flash_attn_max_num_splits_for_cuda_graph"] = \
            AttentionConfig().flash_attn_max_num_splits_for_cuda_graph
    except Exception as e:  # noqa: BLE001
        info["vllm_flash_attn_max_num_splits_for_cuda_graph"] = f"unavailable: {e}"
    return (flash_attn_varlen_func, get_scheduler_metadata, reshape_and_cache_flash), info


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/out", help="output directory")
    ap.add_argument("--budget-s", type=float, default=150.0,
                    help="stop starting new attention cases when this many seconds have passed")
    ap.add_argument("--quick", action="store_true", help="a handful of cases (for checking under the emulator)")
    ap.add_argument("--only", default=None, help="regex: run only attention cases whose id matches")
    ap.add_argument("--variants", default="maxsplits0,maxsplits32")
    ap.add_argument("--timings", default="graph,eager")
    ap.add_argument("--reserve-s", type=float, default=15.0,
                    help="part of the budget kept for the KV-write sweep and the profiler runs after the cases")
    ap.add_argument("--skip-cache-write", action="store_true")
    ap.add_argument("--skip-profile", action="store_true")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--block-size", type=int, default=None,
                    help="KV block size (default: vLLM's CacheConfig.DEFAULT_BLOCK_SIZE, 16, kept by FLASH_ATTN)")
    ap.add_argument("--cg-max-splits", type=int, default=None,
                    help="default: vLLM's AttentionConfig.flash_attn_max_num_splits_for_cuda_graph (32)")
    ap.add_argument("--cg-max-tokens", type=int, default=512,
                    help="max_cudagraph_capture_size: min(2 * max_num_seqs, 512) with vLLM's H200 defaults")
    ap.add_argument("--max-num-seqs", type=int, default=1024, help="sizes the persistent scheduler-metadata buffer")
    ap.add_argument("--max-model-len", type=int, default=16384, help="sets the block table's row width")
    ap.add_argument("--rot-mib", type=int, default=256, help="KV bytes to rotate over, to defeat the L2")
    ap.add_argument("--q-rot-mib", type=int, default=512, help="cap on the bytes of rotated q/out buffers")
    ap.add_argument("--max-rot", type=int, default=64)
    ap.add_argument("--rep-us", type=float, default=200.0, help="target duration of one timed rep")
    ap.add_argument("--max-inner", type=int, default=64, help="most calls in one timed rep")
    ap.add_argument("--target-ms", type=float, default=2.0, help="reps cover about this much time")
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=200)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    variants = [v for v in args.variants.split(",") if v]
    timings = [t for t in args.timings.split(",") if t]
    assert set(variants) <= {"maxsplits0", "maxsplits32"} and set(timings) <= {"graph", "eager"}
    torch.manual_seed(args.seed)
    torch.cuda.set_device(torch.device(args.device))
    errors, skipped = [], []

    log("importing vLLM")
    vllm_fns, vllm_info = load_vllm()
    log(f"vLLM info: {vllm_info}")
    # Follow the installed vLLM's defaults unless told otherwise.
    if args.block_size is None:
        v = vllm_info.get("vllm_default_block_size")
        args.block_size = v if isinstance(v, int) else 16
    if args.cg_max_splits is None:
        v = vllm_info.get("vllm_flash_attn_max_num_splits_for_cuda_graph")
        args.cg_max_splits = v if isinstance(v, int) else 32
    fav = vllm_info.get("fa_version_vllm_would_pick")
    if isinstance(fav, int) and fav != 3:
        log(f"WARNING: vLLM would pick FA{fav} on this GPU; measuring FA3 anyway")

    cases = build_cases(args.quick, args.seed)
    if args.only:
        cases = [c for c in cases if re.search(args.only, c["case_id"])]
    prof_ids = {"decode_b1_k4096", "decode_b32_k4096", "decode_b64_k2048", "prefill_l256", "prefill_l2048",
                "mixed_q1024_p2048_d16_k512"}
    pcases = [] if args.skip_profile else [c for c in build_cases(args.quick, args.seed) if c["case_id"] in prof_ids]
    cw_sizes = [1, 64, 4096] if args.quick else [2 ** i for i in range(14)]
    block_bytes = 2 * args.block_size * NUM_KV_HEADS * HEAD_DIM * 2
    need = max([sum(cdiv(int(x), args.block_size) for x in c["k"]) for c in cases + pcases] + [max(cw_sizes)])
    pool_blocks = max(need, 2 * cdiv(args.rot_mib << 20, block_bytes))
    free, _ = torch.cuda.mem_get_info()
    pool_blocks = min(pool_blocks, max(need, int(0.5 * free) // block_bytes))
    log(f"{len(cases)} attention cases; KV pool {pool_blocks} blocks ({pool_blocks * block_bytes / 2 ** 30:.2f} GiB)")
    bench = Bench(args, pool_blocks, vllm_fns)
    torch.cuda.synchronize()

    # Attention cases first (the main product), within the budget less a reserve for the fixed-cost parts below.
    at = CsvOut(os.path.join(args.out, "attention.csv"), ATTN_COLUMNS)
    done, slowest = 0, 0.0
    for idx, case in enumerate(cases):
        elapsed = time.perf_counter() - T0
        if elapsed + max(2.0, 2 * slowest) > args.budget_s - args.reserve_s:
            skipped = [c["case_id"] for c in cases[idx:]]
            log(f"budget: {elapsed:.1f}s used of {args.budget_s:.0f}s; skipping {len(skipped)} remaining cases")
            break
        t_case = time.perf_counter()
        try:
            rows = bench.run_case(case, variants, timings, errors)
            at.add(rows)
            done += bool(rows)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{case['case_id']}: {e!r}")
            log(f"{case['case_id']} failed: {e!r}\n{traceback.format_exc()}")
            rows = []
        slowest = max(slowest, time.perf_counter() - t_case)
        if (idx + 1) % 20 == 0 or idx + 1 == len(cases):
            last = ", ".join(f"{r['variant']}/{r['timing']}={r['us_median']:.1f}us" for r in rows)
            log(f"case {idx + 1}/{len(cases)} {case['case_id']}: {last}")
        if (idx + 1) % 25 == 0:
            torch.cuda.empty_cache()  # graph pools of earlier cases
    at.close()
    log(f"attention.csv: {at.n} rows from {done} cases")

    # KV-cache write.
    if not args.skip_cache_write:
        cw = CsvOut(os.path.join(args.out, "cache_write.csv"), CACHE_COLUMNS)
        for n in cw_sizes:
            for pattern in ("decode", "prefill"):
                try:
                    cw.add(bench.run_cache_write(n, pattern, timings))
                except Exception as e:  # noqa: BLE001
                    errors.append(f"cache_write {n} {pattern}: {e!r}")
                    log(f"cache_write {n} {pattern} failed: {e!r}")
        cw.close()
        log(f"cache_write.csv: {cw.n} rows")

    # Kernel identities: a few eager calls per variant under torch.profiler.
    kernels = {"note": "eager calls; grid/block/dur from torch.profiler's Chrome trace", "variants": {}}
    if not args.skip_profile:
        for variant in variants:
            kv = kernels["variants"].setdefault(variant, {})
            for c in pcases:
                if variant == "maxsplits32" and c["sum_q"] > args.cg_max_tokens:
                    continue
                if time.perf_counter() - T0 > args.budget_s + args.reserve_s:
                    errors.append(f"profile {variant} {c['case_id']}: skipped, over budget")
                    continue
                try:
                    st = bench.setup_case(c)
                    mns = args.cg_max_splits if variant == "maxsplits32" else 0
                    meta = bench.make_meta(c, st, mns, full_cg=(variant == "maxsplits32"))
                    fn = bench.attn_fn(c, st, meta, mns)
                    fn(0)
                    kv[c["case_id"]] = {
                        "scheduler_metadata": bench.profile_kernels(lambda: bench.sched_meta(c, st, mns), n=1),
                        "attention_call": bench.profile_kernels(lambda: fn(0), n=1),
                        "num_splits": bench.read_num_splits(meta, c["num_reqs"]),
                    }
                    del st
                except Exception as e:  # noqa: BLE001
                    errors.append(f"profile {variant} {c['case_id']}: {e!r}")
                    log(f"profile {variant} {c['case_id']} failed: {e!r}")
        try:
            kernels["cache_write"] = {}
            for pattern in ("decode", "prefill"):
                fn, _ = bench.cache_write_setup(64, pattern)
                fn(0)
                kernels["cache_write"][f"{pattern}_64"] = bench.profile_kernels(lambda: fn(0), n=1)
        except Exception as e:  # noqa: BLE001
            errors.append(f"profile cache_write: {e!r}")
        if not any(v.get("attention_call") for d in kernels["variants"].values() for v in d.values()):
            kernels["warning"] = "the profiler recorded no kernels (no CUPTI, e.g. under emulation)"
        with open(os.path.join(args.out, "kernels.json"), "w") as f:
            json.dump(kernels, f, indent=1)
        log("kernels.json written")

    extra = {"elapsed_s": round(time.perf_counter() - T0, 1), "vllm_info": vllm_info,
             "cases_total": len(cases), "cases_done": done, "budget_exhausted": bool(skipped),
             "skipped_cases": skipped, "errors": errors, "kv_pool_blocks": pool_blocks,
             "cache_write_sizes": cw_sizes}
    with open(os.path.join(args.out, "provenance.json"), "w") as f:
        json.dump(provenance(args, extra), f, indent=1, default=str)
    log(f"done in {extra['elapsed_s']}s; outputs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
