"""Each step's attention work, handed to the predictor before the step's kernels are launched.

FlashAttention's kernels are launched with a persistent grid whose shape says nothing about the work: the
query and context lengths of the batch sit in device memory (and inside a full CUDA graph the same launch
serves every batch of a size). The predictor (shim_c/core/step.c) therefore times them from the step
context: vLLM's model runner builds every step's batch on the host, with each request's number of scheduled
tokens (query length) and tokens already computed, and this hands those lengths, with the model's attention
shape, to the shim as soon as the batch is prepared. vLLM 0.24 runs Llama-family models on its V2 runner
(`vllm.v1.worker.gpu.model_runner`, prepare_inputs) and others, such as Qwen2, on the V1 runner
(`vllm.v1.worker.gpu_model_runner`, _prepare_inputs); both are hooked. Without the context, the V1 runner's
attention kernels took their launch's roofline: a Qwen2.5-32B-shaped model's decode step at batch 1 came out
12% short of the H200's (16.7 ms against 19.0, vllm_32b_2026-12-03a). The context stays in force until the
next step replaces it (warm-up and capture runs, which do not go through prepare_inputs, keep the last one).
With an fp8 KV cache the attention model reads K, V and Q at one byte.
"""
from __future__ import annotations

import ctypes
import logging

import numpy as np

log = logging.getLogger("timewarp.vllm")

_core = ctypes.CDLL(None)
_set = _core.tw_step_set
_set.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
_set.restype = None
_set_kv_elem = _core.tw_step_set_kv_elem
_set_kv_elem.argtypes = [ctypes.c_int]
_set_kv_elem.restype = None


def publish(q_lens: np.ndarray, k_lens: np.ndarray, heads: int, kv_heads: int, head_dim: int) -> None:
    q = np.ascontiguousarray(q_lens, dtype=np.int32)
    k = np.ascontiguousarray(k_lens, dtype=np.int32)
    _set(len(q), q.ctypes.data, k.ctypes.data, heads, kv_heads, head_dim)


def _attention_shape(runner) -> tuple[int, int, int]:
    """The runner's attention heads, KV heads and head size, worked out at its first step (with its KV cache's
    element size, handed to the shim then: both are fixed for the runner's life)."""
    shape = getattr(runner, "_timewarp_attn_shape", None)
    if shape is None:
        shape = runner._timewarp_attn_shape = _first_step(runner)
    return shape


def _first_step(runner) -> tuple[int, int, int]:
    mc, pc = runner.model_config, runner.vllm_config.parallel_config
    # --kv-cache-dtype fp8 (fp8, fp8_e4m3, fp8_e5m2): FA3 reads K, V and the quantized query as fp8
    cache_dtype = str(getattr(runner.vllm_config.cache_config, "cache_dtype", "auto"))
    _set_kv_elem(1 if cache_dtype.startswith("fp8") else 2)
    return mc.get_num_attention_heads(pc), mc.get_num_kv_heads(pc), mc.get_head_size()


def _after_prepare_inputs(runner, batch, *args, **kwargs) -> None:
    n = batch.num_reqs
    q = batch.num_scheduled_tokens[:n]
    publish(q, batch.num_computed_tokens_np[:n] + q, *_attention_shape(runner))


def _after_v1_prepare_inputs(runner, result, scheduler_output, num_scheduled_tokens, *args, **kwargs) -> None:
    n = runner.input_batch.num_reqs
    q = np.asarray(num_scheduled_tokens)[:n]
    publish(q, runner.input_batch.num_computed_tokens_cpu[:n] + q, *_attention_shape(runner))


def install() -> None:
    from ._hooks import after_method
    after_method("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "prepare_inputs", _after_prepare_inputs,
                 "step context not published")
    after_method("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_prepare_inputs", _after_v1_prepare_inputs,
                 "step context not published (V1 runner)")
